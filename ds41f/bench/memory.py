"""Per-node memory during the run: MemAvailable on every node, against the serve stage's steady guard.

The bench samples every ``interval`` seconds. A cluster's nodes are read over SSH with the inventory's
connection settings (``cat /proc/meminfo``, nothing written); a loopback server without an inventory is this
machine, read directly. When a node comes within ``MARGIN_GIB`` of the steady guard the monitor trips, and the
bench stops before its next sample (the report is still written).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from ds41f import paths, runs

MARGIN_GIB = 1.0
LOCAL = "local"


def steady_guard_gib():
    """The serve stage's steady guard (group_vars/all/serve.yml serve_guard_steady_gib)."""
    try:
        data = yaml.safe_load((paths.ROOT / "group_vars" / "all" / "serve.yml").read_text())
        return float(data["serve_guard_steady_gib"])
    except (OSError, KeyError, TypeError, ValueError):
        return 3.0


def mem_available_gib(meminfo_text):
    for line in meminfo_text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / (1024 ** 2)  # kB
    raise ValueError("no MemAvailable line")


def ssh_argv(hostvars, host, command=("cat", "/proc/meminfo")):
    """The ssh command line that runs a read-only ``command`` on one node with its inventory connection
    settings (by default: read its /proc/meminfo)."""
    # ansible.cfg's host key check too: the node's key must be the one pinned in the site's known_hosts.
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"] + runs.ssh_options()
    if hostvars.get("ansible_port"):
        argv += ["-p", str(hostvars["ansible_port"])]
    if hostvars.get("ansible_ssh_private_key_file"):
        argv += ["-i", str(hostvars["ansible_ssh_private_key_file"])]
    argv += shlex.split(hostvars.get("ansible_ssh_common_args") or "")
    address = hostvars.get("ansible_host", host)
    user = hostvars.get("ansible_user")
    return argv + ["%s@%s" % (user, address) if user else address, *command]


def inventory_hosts(inventory):
    """{host: hostvars} of the cluster's nodes in an inventory (ansible-inventory renders it; nothing connects)."""
    tool = shutil.which("ansible-inventory") or str(Path(sys.executable).parent / "ansible-inventory")
    env = dict(os.environ, ANSIBLE_CONFIG=str(paths.ROOT / "ansible.cfg"))
    proc = subprocess.run([tool, "-i", str(inventory), "--list"], capture_output=True, text=True, env=env,
                          cwd=str(paths.ROOT), timeout=120)
    if proc.returncode:
        raise RuntimeError("ansible-inventory -i %s failed: %s" % (inventory, proc.stderr.strip()[-300:]))
    data = json.loads(proc.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    return {h: hostvars.get(h, {}) for h in sorted(hostvars) if h != "localhost"}


class Monitor:
    """Samples MemAvailable on its nodes in the background; ``series`` keeps every reading."""

    def __init__(self, nodes, guard_gib, interval=2.0, log=print):
        self.nodes = nodes  # {name: ssh argv, or None for this machine}
        self.guard_gib, self.interval, self.log = guard_gib, interval, log
        self.series = []  # {"t": seconds since start, "node": name, "available_gib": x}
        self.errors = {}
        self.tripped = None
        self._task = None
        self._t0 = None

    async def _read(self, name, argv):
        if argv is None:
            return mem_available_gib(Path("/proc/meminfo").read_text())
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 15)
        if proc.returncode:
            raise RuntimeError(err.decode(errors="replace").strip()[-200:] or "ssh exit %d" % proc.returncode)
        return mem_available_gib(out.decode())

    async def sample_once(self):
        t = time.monotonic() - self._t0
        for name, argv in self.nodes.items():
            try:
                gib = await self._read(name, argv)
            except (OSError, RuntimeError, ValueError, TimeoutError) as exc:
                self.errors[name] = str(exc)
                continue
            self.series.append({"t": round(t, 2), "node": name, "available_gib": round(gib, 3)})
            if gib < self.guard_gib + MARGIN_GIB and not self.tripped:
                self.tripped = ("memory: %s has %.2f GiB MemAvailable, within %.0f GiB of the %.1f GiB steady guard: "
                                "the bench stopped before the guard stops the engine" % (
                                    name, gib, MARGIN_GIB, self.guard_gib))
                self.log("  " + self.tripped)

    async def _loop(self):
        while True:
            await self.sample_once()
            await asyncio.sleep(self.interval)

    def start(self):
        self._t0 = time.monotonic()
        self._task = asyncio.ensure_future(self._loop())

    async def stop(self):
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            await self.sample_once()  # one last reading after the load

    def summary(self):
        per_node = {}
        for row in self.series:
            node = per_node.setdefault(row["node"], {"samples": 0, "min_available_gib": None})
            node["samples"] += 1
            if node["min_available_gib"] is None or row["available_gib"] < node["min_available_gib"]:
                node["min_available_gib"] = row["available_gib"]
        for node in per_node.values():
            node["headroom_gib"] = round(node["min_available_gib"] - self.guard_gib, 3)
        return {"guard_gib": self.guard_gib, "margin_gib": MARGIN_GIB, "interval_s": self.interval,
                "nodes": per_node, "errors": self.errors, "series": self.series, "tripped": self.tripped}
