"""One ansible-playbook call: its own argument list, its own runner folder, its artifacts kept.

ansible-runner replays whatever an earlier call left in its private data folder (``env/cmdline``,
``env/extravars``, ``env/envvars``), so every call gets a new folder under ``.ansible/runs/`` and the argument
list goes to ansible-playbook as a list: nothing is joined into a string and split again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ds41f import paths, secret_env

RUNS = paths.ROOT / ".ansible" / "runs"
KEEP = 50  # run folders kept; the oldest go first
# Every node gets a time budget. A silent connection ends after ansible.cfg's SSH keepalives; on top of that, the
# read-only commands limit every task (ansible's task timeout), so a node whose sshd answers but whose tools hang
# (a wedged docker) cannot hold them either. Converging runs have no such limit: a model download takes hours.
TASK_TIMEOUT_S = {"doctor": 120, "status": 60, "logs": 60, "render": 60}


def tool(name):
    """An ansible tool installed beside this Python, also when ds41f is called without activating its venv."""
    return os.path.join(os.path.dirname(sys.executable), name)


def playbook_argv(playbook, inventories, check=False, diff=False, limit=None, extra_vars=(), passthrough=()):
    """ansible-playbook's arguments, one list item per argument, in the order given; a vault password file the
    environment named comes as its flag (secret_env)."""
    argv = [str(playbook)]
    for inventory in inventories:
        argv += ["-i", str(inventory)]
    argv += secret_env.ansible_flags()
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    if limit:
        argv += ["--limit", limit]
    for extra in extra_vars or ():
        argv += ["-e", extra]
    return argv + list(passthrough or ())


def base_env(extra=None):
    """The project's ansible.cfg, and the tools beside this Python first on PATH (ds41f called without its venv
    activated still runs its own ansible). Host keys are checked: ansible-runner turns the check off unless the
    environment names it. No secret of this process's environment reaches a run (secret_env.hold): the runner
    copies the environment, and keeps it in artifacts/command."""
    secret_env.hold()
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return dict(extra or {}, ANSIBLE_CONFIG=str(paths.ROOT / "ansible.cfg"), PATH=path,
                ANSIBLE_HOST_KEY_CHECKING="True")


def budget_env(command):
    """The task time limit of a read-only command (TASK_TIMEOUT_S), as ansible-playbook reads it."""
    return {"ANSIBLE_TASK_TIMEOUT": str(TASK_TIMEOUT_S[command])} if command in TASK_TIMEOUT_S else {}


# ansible.cfg's ssh options that an ssh ds41f opens itself takes too: the keepalives (a frozen node ends the stream)
# and the host key check against the pinned known_hosts (which the inventory's ssh common args name).
SSH_OPTIONS = ("serveralive", "stricthostkeychecking", "globalknownhostsfile")


def ssh_options():
    """ansible.cfg's SSH keepalives, host key checking and connection timeout as ssh options, for the ssh that
    `ds41f logs --follow` and the bench open themselves: the same budget and the same check as every ansible
    connection, from the one place they are set."""
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(paths.ROOT / "ansible.cfg")
    words = cfg.get("ssh_connection", "ssh_args", fallback="").split()
    out = []
    for i, word in enumerate(words[:-1]):
        if word == "-o" and words[i + 1].lower().startswith(SSH_OPTIONS):
            out += ["-o", words[i + 1]]
    timeout = cfg.get("defaults", "timeout", fallback="")
    return out + (["-o", "ConnectTimeout=%s" % timeout] if timeout else [])


def new_folder(name):
    """A run folder nobody used before: .ansible/runs/<UTC time>-<name>-<pid>."""
    # 0700: a run's events hold what its modules returned (the engine container's environment, with the API key).
    RUNS.mkdir(mode=0o700, parents=True, exist_ok=True)
    RUNS.chmod(0o700)
    prune()
    stamp = paths.stamp()
    folder = RUNS / ("%s-%s-%d" % (stamp, name, os.getpid()))
    n = 1
    while folder.exists():  # two calls in one second from one process (tests)
        n += 1
        folder = RUNS / ("%s-%s-%d.%d" % (stamp, name, os.getpid(), n))
    folder.mkdir(mode=0o700)
    return folder


def prune(keep=KEEP):
    folders = sorted((p for p in RUNS.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in folders[:-keep] if len(folders) > keep else []:
        shutil.rmtree(old, ignore_errors=True)


class Result:
    def __init__(self, rc, artifacts, seconds):
        self.rc, self.artifacts, self.seconds = rc, Path(artifacts), seconds

    def events(self):
        """The runner's job events in order (empty for a run without them)."""
        folder = self.artifacts / "job_events"
        if not folder.is_dir():
            return []
        files = sorted(folder.glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
        return [json.loads(p.read_text()) for p in files]

    def task_results(self, task):
        """{host: result} of the task of that name that ran OK."""
        found = {}
        for event in self.events():
            data = event.get("event_data") or {}
            if event.get("event") == "runner_on_ok" and data.get("task") == task:
                found[data.get("host")] = data.get("res") or {}
        return found

    def failures(self):
        """[(host, task, message)] of failed and unreachable results."""
        found = []
        for event in self.events():
            data = event.get("event_data") or {}
            if event.get("event") in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
                res = data.get("res") or {}
                found.append((data.get("host"), data.get("task"), res.get("msg") or res.get("stderr") or ""))
        return found

    def where(self):
        return "artifacts: %s (stdout, job_events/, rc, command)" % self.artifacts


def run_playbook(name, argv, env=None, quiet=False):
    """ansible-playbook ``argv`` through ansible-runner in a new folder; the runner's artifacts stay there."""
    import ansible_runner

    folder = new_folder(name)
    start = time.monotonic()
    _, _, rc = ansible_runner.run_command(
        executable_cmd=tool("ansible-playbook"), cmdline_args=list(argv), private_data_dir=str(folder),
        artifact_dir=str(folder), ident="artifacts", envvars=base_env(env), quiet=quiet)
    return Result(rc, folder / "artifacts", time.monotonic() - start)


def run_tee(name, argv, env=None):
    """A command whose own callback prints (the doctor's drift table): its output shown and kept with its rc
    and argument list, in the same kind of run folder."""
    folder = new_folder(name)
    artifacts = folder / "artifacts"
    artifacts.mkdir()
    (artifacts / "command").write_text(json.dumps(list(argv)) + "\n")
    start = time.monotonic()
    env = base_env(env)  # first: it takes the secrets out of os.environ
    with open(artifacts / "stdout", "w") as kept:
        proc = subprocess.Popen(list(argv), env=dict(os.environ, **env), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            sys.stdout.write(line)
            kept.write(line)
        rc = proc.wait()
    (artifacts / "rc").write_text("%d\n" % rc)
    return Result(rc, artifacts, time.monotonic() - start)
