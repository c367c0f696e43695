# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: unit_policy
short_description: The boot target and which systemd units are off, with a record that makes it revertible
version_added: 0.1.0
description:
  - Sets the default boot target, enables and starts O(enable) units, disables and stops O(disable) units,
    masks and stops O(mask) units. Units of O(disable) and O(mask) that are not installed on the node are
    skipped (and listed in RV(absent_units)); an O(enable) unit must exist (after a C(daemon-reload)).
  - Every change is recorded in O(record) (the unit's state before), so O(state=absent) puts back exactly
    what this module changed and then removes the record; units it never touched stay as they are.
options:
  default_target:
    description: The target to boot into (C(systemctl set-default)). Omit to leave it.
    type: str
  enable:
    description:
      - Units to enable and start (a stage's own units). A unit whose start condition is false here (such as
        C(ConditionVirtualization=!container) in a lab node) counts as started.
    type: list
    elements: str
    default: []
  disable:
    description: Units to disable and stop.
    type: list
    elements: str
    default: []
  mask:
    description: Units to mask and stop (for units another package re-enables).
    type: list
    elements: str
    default: []
  record:
    description: Where the states before the change are kept.
    type: path
    default: /var/lib/ds41f/host_baseline/units.json
  state:
    description: C(present) applies the policy; C(absent) restores what the record says and removes it.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Reads with C(systemctl show) and C(get-default); changes nothing in check mode.
  diff_mode:
    support: full
    description: Each unit's or the target's state before and after.
  idempotent:
    support: full
    description: A second run finds every unit in its wanted state and the record unchanged.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Headless, idle services off
  dgxspark.ds41f.unit_policy:
    default_target: multi-user.target
    enable: [ds41f-management-health.timer]
    disable: [gdm3.service, cups.service, bluetooth.service]
    mask: [nvidia-nvme-interrupt-coalescing.service]

- name: Put back what the policy changed
  dgxspark.ds41f.unit_policy:
    state: absent
"""

RETURN = r"""
actions:
  description: The systemctl commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
drift:
  description: Differences found (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
absent_units:
  description: Named units that are not installed on this node.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

ENABLED = ("enabled", "enabled-runtime")


class Systemd:
    def __init__(self, module):
        self.module = module
        self.bin = module.get_bin_path("systemctl", required=True)

    def run(self, *args):
        rc, out, err = self.module.run_command([self.bin, *args])
        if rc != 0:
            self.module.fail_json(msg="systemctl %s failed: %s" % (" ".join(args), (err or out).strip()))
        return out

    def show(self, units):
        """{unit: {LoadState, UnitFileState, ActiveState}} (one systemctl call; blocks in unit order)."""
        if not units:
            return {}
        out = self.run("show", "--property=Id,LoadState,UnitFileState,ActiveState,ConditionResult", "--", *units)
        blocks = out.strip().split("\n\n")
        states = {}
        for unit, block in zip(units, blocks, strict=False):
            states[unit] = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        return states

    def default(self):
        return self.run("get-default").strip()


def load_record(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def save_record(path, record):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")


def describe(state):
    return "%s, %s" % (state.get("UnitFileState") or "-", state.get("ActiveState") or "-")


def policy_changes(module, systemd, record, absent_units, plan=None):
    """The changes the policy needs, as Plan.change arguments; ``record`` gains each unit's prior state."""
    p = module.params
    changes = []
    units = record.setdefault("units", {})
    if p["default_target"]:
        current = systemd.default()
        if current != p["default_target"]:
            record.setdefault("default_target", current)
            changes.append(("default target", p["default_target"], current,
                            "systemctl set-default %s" % p["default_target"],
                            lambda: systemd.run("set-default", p["default_target"])))
    wanted = ([(u, "mask") for u in p["mask"]] + [(u, "disable") for u in p["disable"] if u not in p["mask"]]
              + [(u, "enable") for u in p["enable"]])
    states = systemd.show([u for u, _ in wanted])
    for unit, how in wanted:
        state = states.get(unit, {})
        if state.get("LoadState") != "not-found" and plan is not None:
            # a unit whose condition is false here (a lab node) never runs: it is managed as enabled only
            plan.manages("unit", unit, policy=how, runs=state.get("ConditionResult") != "no")
        if how == "enable":
            file_state, active = state.get("UnitFileState"), state.get("ActiveState") == "active"
            # A unit whose condition is false (e.g. ConditionVirtualization=!container in a lab node) is
            # started as far as it ever will be.
            started = active or state.get("ConditionResult") == "no"
            if file_state not in ENABLED or not started:
                units.setdefault(unit, {"file": file_state or "not-found", "active": active})
                changes.append((unit, "enabled, active", describe(state), "systemctl enable --now %s" % unit,
                                lambda unit=unit: (systemd.run("daemon-reload"), systemd.run("enable", "--now", unit))))
            continue
        if state.get("LoadState") == "not-found" and state.get("UnitFileState") != "masked":
            absent_units.append(unit)
            continue
        file_state, active = state.get("UnitFileState"), state.get("ActiveState") == "active"
        if how == "mask":
            needed = file_state != "masked" or active
            args, after = ["mask", "--now", unit], "masked, inactive"
        else:
            needed = file_state in ENABLED or active
            args = ["disable", "--now", unit] if file_state in ENABLED else ["stop", unit]
            after = "%s, inactive" % ("disabled" if file_state in ENABLED else file_state)
        if needed:
            units.setdefault(unit, {"file": file_state, "active": active})
            changes.append((unit, after, describe(state), "systemctl %s" % " ".join(args),
                            lambda args=args: systemd.run(*args)))
    return changes


def restore(module, plan, systemd, record):
    units = record.get("units", {})
    states = systemd.show(sorted(units))
    for unit, before in sorted(units.items()):
        state = states.get(unit, {})
        steps = []
        if before["file"] not in ENABLED + ("masked",) and state.get("UnitFileState") in ENABLED:
            steps.append(["disable", "--now", unit])  # a unit this policy enabled
        if state.get("UnitFileState") == "masked" and before["file"] != "masked":
            steps.append(["unmask", unit])
        if before["file"] in ENABLED and state.get("UnitFileState") != before["file"]:
            steps.append(["enable", unit])
        if before["active"] and state.get("ActiveState") != "active":
            steps.append(["start", unit])
        if steps:
            def run(steps=steps):
                for args in steps:
                    systemd.run(*args)
            plan.change(unit, describe({"UnitFileState": before["file"],
                                        "ActiveState": "active" if before["active"] else "inactive"}),
                        describe(state), "; ".join("systemctl " + " ".join(a) for a in steps), run)
    previous = record.get("default_target")
    if previous and systemd.default() != previous:
        plan.change("default target", previous, systemd.default(), "systemctl set-default %s" % previous,
                    lambda: systemd.run("set-default", previous))


MODULE_SPEC = dict(
    argument_spec={
        "default_target": {"type": "str"},
        "enable": {"type": "list", "elements": "str", "default": []},
        "disable": {"type": "list", "elements": "str", "default": []},
        "mask": {"type": "list", "elements": "str", "default": []},
        "record": {"type": "path", "default": "/var/lib/ds41f/host_baseline/units.json"},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    systemd = Systemd(module)
    plan, absent_units = Plan(module), []
    record = load_record(p["record"])
    exists = os.path.exists(p["record"])
    if p["state"] == "present":
        before = json.dumps(record, indent=2, sort_keys=True) if exists else None
        changes = policy_changes(module, systemd, record, absent_units, plan)
        after = json.dumps(record, indent=2, sort_keys=True)
        if changes and after != before:  # the prior states are on disk before anything changes
            plan.change(p["record"], after, before, "record prior states in %s" % p["record"],
                        lambda: save_record(p["record"], record), row=False)
        for change in changes:  # each row names its unit as data (a cable check names the far end's lldpd)
            plan.change(*change, about=None if change[0] == "default target" else ("unit", change[0]))
    else:
        restore(module, plan, systemd, record)
        if exists:
            plan.change(p["record"], None, "present", "remove %s" % p["record"], lambda: os.remove(p["record"]))
    module.exit_json(**plan.result(absent_units=absent_units))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
