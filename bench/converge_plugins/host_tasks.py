"""bench/converge's own callback: counts host-tasks per host (a task's result on one host) and writes them as
JSON to $DS41F_BENCH_TASKS when the run ends. Not part of the collection; bench/converge enables it."""

from __future__ import annotations

import collections
import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: host_tasks
type: aggregate
short_description: host-tasks per host, for bench/converge
description: Counts each task result per host (ran or skipped) and writes them to $DS41F_BENCH_TASKS.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "host_tasks"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.counts = collections.defaultdict(collections.Counter)

    def _count(self, result, outcome):
        host = result._host.get_name()
        self.counts[host][outcome] += 1
        # A task delegated to the controller (localhost) is no round trip to the node it runs for.
        delegated = (result._result.get("_ansible_delegated_vars") or {}).get("ansible_host")
        if delegated in ("localhost", "127.0.0.1") or host == "localhost":
            self.counts[host]["local"] += 1

    def v2_runner_on_ok(self, result):
        self._count(result, "ran")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, "ran")

    def v2_runner_on_unreachable(self, result):
        self._count(result, "ran")

    def v2_runner_on_skipped(self, result):
        self._count(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("DS41F_BENCH_TASKS")
        if path:
            with open(path, "w") as out:
                json.dump({host: dict(c) for host, c in self.counts.items()}, out, indent=1, sort_keys=True)
