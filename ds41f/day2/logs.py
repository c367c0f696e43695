"""`ds41f logs [NODE] [--follow] [--lines N]`: the engine container's log of every rank, each line after its
node's name. The last lines come through playbooks/day2/logs.yml; --follow then keeps one ssh per node open
(`docker logs --follow` through the collection's redaction on the node), with the connection settings that
playbook reads from the inventory. Either way every secret the node knows is redacted there."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ds41f import paths, runs
from ds41f.day2 import common


def prefixed(node, lines, width):
    return ["%-*s | %s" % (width, node, line) for line in lines]


def ssh_argv(ssh, remote):
    """ssh to a node as the inventory says (host, user, port, key, common args), running ``remote``."""
    # -tt: the remote `docker logs --follow` gets a terminal, so it ends (SIGHUP) when this ssh does.
    argv = ["ssh", "-tt", "-o", "BatchMode=yes"] + runs.ssh_options()
    if ssh.get("key"):
        argv += ["-i", ssh["key"]]
    if str(ssh.get("port") or ""):
        argv += ["-p", str(ssh["port"])]
    argv += shlex.split(ssh.get("args") or "")
    target = "%s@%s" % (ssh["user"], ssh["host"]) if ssh.get("user") else ssh["host"]
    return argv + [target, remote]


def follow_argv(reading, lines):
    """ssh running the collection's redaction program on the node (plugins/module_utils/redaction.py, stdlib only):
    it follows the container's log and redacts every secret the node knows before a line leaves it."""
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import redaction

    source = Path(redaction.__file__).read_text()
    remote = shlex.join(["python3", "-c", source, reading["container"], str(lines), *(reading.get("key_files") or [])])
    return ssh_argv(reading["ssh"], remote)


def follow(readings, lines, width):
    """Stream every node's log until Ctrl-C (or SIGTERM); lines of different nodes never mix mid-line."""
    lock = threading.Lock()
    procs = []

    def pump(node, proc):
        for line in proc.stdout:
            with lock:
                sys.stdout.write("%-*s | %s\n" % (width, node, line.rstrip("\r\n")))
                sys.stdout.flush()

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    threads = []
    try:
        for node, reading in readings:
            proc = subprocess.Popen(follow_argv(reading, lines), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, text=True, errors="replace")
            procs.append(proc)
            threads.append(threading.Thread(target=pump, args=(node, proc), daemon=True))
            threads[-1].start()
        for proc in procs:
            proc.wait()
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
    return max((p.returncode or 0 for p in procs if p.returncode and p.returncode > 0), default=0)


def main(inventory, env, node=None, lines=50, follow_on=False, passthrough=()):
    extra = {"day2_lines": lines, "day2_connection_only": follow_on}
    result = common.run("logs", inventory, env, limit=node, extra=extra, passthrough=passthrough)
    readings = common.by_rank(result.task_results("Engine log"))
    if not readings:
        common.report_failures(result, "logs")
        return result.rc or 1
    width = max(len(n) for n, _ in readings)
    if follow_on:
        return follow(readings, lines, width)
    missing = 0
    for name, reading in readings:
        if str(reading.get("rc")) != "0":
            missing += 1
            print("%-*s | (no log of container %s: %s)" % (width, name, reading.get("container"),
                                                           " ".join(reading.get("lines") or []) or "docker failed"))
            continue
        print("\n".join(prefixed(name, reading.get("lines") or [], width)))
    common.report_failures(result, "logs")
    return 1 if missing else 0
