# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: memory_guard
short_description: Arm a node's memory guard for one phase - its config, its unit running, its first sample
version_added: 0.1.0
description:
  - The serve stage's memory guard (a small program run by a systemd unit) kills the engine container when the
    node's MemAvailable falls below a threshold. This module arms it for one phase in one call.
  - Writes O(path) with O(content) (mode C(0644), root) when it differs.
  - (Re)starts O(unit) when the config changed, when the unit is not active, when one of O(restart_after) was
    written after the unit started (or systemd holds an older copy of the unit file), or with O(rearm), after a
    C(systemctl daemon-reload) so that a changed unit file applies.
  - The restart follows the files on the node, not the run that wrote them, so a run cut off between writing the
    guard's program and restarting it is finished by the next one.
  - Then waits up to O(wait) seconds for the guard's first sample in O(state_file), written by this start of the
    guard (its C(armed) time), and fails naming the unit when none comes.
  - In check mode a config that differs is reported (a drift row and a diff); a restart is the consequence of that
    row, or of the doctor's live check that names an inactive guard, and never a change of its own.
options:
  path:
    description: The guard's config file.
    type: path
    required: true
  content:
    description: The config, as the guard program reads it (JSON); written as given.
    type: str
    required: true
  unit:
    description: The guard's systemd unit.
    type: str
    required: true
  state_file:
    description: The file where the guard writes its samples (C(armed), C(samples)).
    type: path
    required: true
  restart_after:
    description:
      - The files the guard runs (its program, the modules it imports, its unit file). One whose modification
        time is after the unit's last start means the running guard is an older one, and it is restarted.
      - Read outside check mode only; in check mode the files' own drift is what the doctor reports.
    type: list
    elements: path
    default: []
  rearm:
    description: Restart the guard even when its config is unchanged and it is active (a new phase begins).
    type: bool
    default: false
  wait:
    description: Seconds to wait for the first sample after a start; C(0) does not wait.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: Reads the config and the unit's state; writes and restarts nothing.
  diff_mode:
    support: full
    description: The config before and after.
  idempotent:
    support: full
    description: With O(rearm=false), a second run finds the config as given and the guard active and no newer
      than its files, and does nothing.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Arm the startup guard before the engine starts
  dgxspark.ds41f.memory_guard:
    path: /etc/ds41f/memguard.json
    content: "{{ {'container': 'spark-ds41f', 'phase': 'startup', 'threshold_gib': 5.0, 'interval_s': 0.25,
      'state_file': '/run/ds41f/memguard.json'} | to_nice_json(sort_keys=true) }}\n"
    unit: ds41f-memguard.service
    state_file: /run/ds41f/memguard.json
    restart_after: [/usr/local/lib/ds41f/ds41f-memguard.py, /etc/systemd/system/ds41f-memguard.service]
    rearm: true
"""

RETURN = r"""
actions:
  description: What was (or in check mode would be) done.
  returned: always
  type: list
  elements: str
drift:
  description: Differences found (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
active:
  description: The unit's state as read before any restart (C(systemctl is-active)).
  returned: always
  type: str
  sample: active
armed:
  description: Whether the guard was (re)started by this call.
  returned: always
  type: bool
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, write_file
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host


def first_sample(host, state_file, since, wait):
    """The guard's state once it holds a sample of a start at or after ``since``; None after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = json.loads(host.read(state_file) or "{}")
        except ValueError:  # caught mid-write
            state = {}
        if state.get("samples", 0) >= 1 and state.get("armed", 0) >= since:
            return state
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


MODULE_SPEC = dict(
    argument_spec={
        "path": {"type": "path", "required": True},
        "content": {"type": "str", "required": True},
        "unit": {"type": "str", "required": True},
        "state_file": {"type": "path", "required": True},
        "restart_after": {"type": "list", "elements": "path", "default": []},
        "rearm": {"type": "bool", "default": False},
        "wait": {"type": "int", "default": 30},
    },
    supports_check_mode=True,
)


def systemctl(module, host, *argv):
    rc, out, err = host.run(["systemctl", *argv])
    if rc != 0 and argv[0] != "is-active":
        module.fail_json(msg="systemctl %s: %s" % (" ".join(argv), (err or out).strip()))
    return out.strip()


def older_than_its_files(host, unit, paths):
    """Why the running unit is older than what it runs: the first of ``paths`` written after its start (or systemd
    holding an older unit file), else None."""
    rc, out, _ = host.run(["systemctl", "show", "-p", "NeedDaemonReload", "-p", "ActiveEnterTimestampMonotonic",
                           unit])
    shown = dict(line.split("=", 1) for line in out.splitlines() if "=" in line) if rc == 0 else {}
    if shown.get("NeedDaemonReload") == "yes":
        return "its unit file changed on disk"
    started = int(shown.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
    if not started:  # no start time to judge by (an older systemd, or no answer): the files do not decide
        return None
    # A file's time on the monotonic clock systemd keeps: the two clocks read together, moments apart.
    offset = time.time() - time.monotonic()
    for path in paths:
        try:
            written = os.stat(host.path(path)).st_mtime - offset
        except OSError:
            continue
        if written > started:
            return "%s was written after it started" % path
    return None


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    current = host.read(p["path"])
    if current != p["content"]:
        plan.change(p["path"], p["content"], current, "write %s" % p["path"],
                    lambda: write_file(p["path"], p["content"]))
    plan.file_attributes(p["path"], "0644")
    plan.manages("unit", p["unit"], policy="running")
    active = systemctl(module, host, "is-active", p["unit"]) or "unknown"
    armed = False
    stale = None
    if active == "active" and not (plan.actions or p["rearm"] or module.check_mode):
        stale = older_than_its_files(host, p["unit"], p["restart_after"])
    if (plan.actions or active != "active" or p["rearm"] or stale) and not module.check_mode:
        since = time.time() - 1  # the guard's clock is this node's: a second for rounding
        systemctl(module, host, "daemon-reload")
        systemctl(module, host, "restart", p["unit"])
        plan.actions.append("restart %s" % p["unit"] + (" (%s)" % stale if stale else ""))
        armed = True
        if p["wait"] > 0 and first_sample(host, p["state_file"], since, p["wait"]) is None:
            module.fail_json(msg="%s: no sample in %s within %d s of its start. Fix: journalctl --unit %s on this "
                                 "node says why the guard did not run." % (p["unit"], p["state_file"], p["wait"],
                                                                            p["unit"]),
                             **plan.result(active=active, armed=armed))
    module.exit_json(**plan.result(active=active, armed=armed))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
