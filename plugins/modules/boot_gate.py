# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: boot_gate
short_description: Read a node's boot identity, or judge a boot against what it should have brought up
version_added: 0.1.0
description:
  - Without O(before), reads the boot identity (boot id and PID 1 start time) for a later gate.
  - With O(before), waits until systemd has finished starting (at most O(settle_timeout) seconds) and judges
    the boot - a new boot identity, systemd running or degraded, and the kernel release, page size, driver and
    command-line parameters of O(expect). Returns RV(verdict); it does not fail on a bad verdict, so the caller
    can roll back first.
  - In a container (a lab node) the kernel, page size, driver and command line are the host's, so they are
    listed as unchecked instead of passed or failed. The lab-only O(lab_marker) file, when present, fails the gate; it
    stands in for a node that comes back wrong.
  - After a passed gate, O(record) keeps the release the node now runs (RV(record)); a lab node, which boots
    no kernel, counts that release as its running one.
options:
  before:
    description: The boot identity read before the reboot; omit to only read it.
    type: str
  expect:
    description:
      - kernel (release), page_size (bytes), driver (NVIDIA version, or null when none is expected), cmdline (the
        parameters /proc/cmdline must set, such as C(kho=off)).
    type: dict
    default: {}
  lab_marker:
    description: Lab only - a file whose presence makes this node's gate fail.
    type: path
  record:
    description: Where a passed gate records the running release (JSON).
    type: path
  record_kernel:
    description: The release to record after a passed gate (default the C(kernel) of O(expect)).
    type: str
  settle_timeout:
    description: Seconds to wait for systemd to leave "starting" before judging.
    type: int
    default: 300
attributes:
  check_mode:
    support: full
    description: Reads only, except the record, which is not written in check mode.
  diff_mode:
    support: full
    description: The record before and after.
  idempotent:
    support: full
    description: The record is written only when its content changes.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Boot identity before the reboot
  dgxspark.ds41f.boot_gate:
  register: before

- name: Health gate
  dgxspark.ds41f.boot_gate:
    before: "{{ before.boot }}"
    expect: {kernel: 7.0.0-1019-nvidia-64k, page_size: 65536, driver: 580.178.04}
    record: /var/lib/ds41f/kernel/boot.json
  register: gate
"""

RETURN = r"""
boot:
  description: The boot identity now.
  returned: always
  type: str
seen:
  description: kernel, page_size, driver, cmdline, boot, systemd, marker as read.
  returned: always
  type: dict
verdict:
  description: ok, failures (each a sentence), unchecked (what a container cannot show).
  returned: when before is given
  type: dict
record:
  description: The record's content now (kernel, boot, and which of the gate's checks it C(checked) and which
    stayed C(unchecked), with the reason - in a lab node the kernel, page size and driver are the host's), or null.
  returned: always
  type: dict
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

SETTLING = ("initializing", "starting")
# What the gate judges beside the boot itself: (name in the record, key of O(expect)).
GATED = (("kernel", "kernel"), ("page size", "page_size"), ("driver", "driver"), ("command line", "cmdline"))


def systemd_state(module, timeout):
    deadline = time.monotonic() + timeout
    while True:
        _, out, _ = module.run_command(["systemctl", "is-system-running"])
        state = out.strip()
        if state not in SETTLING or time.monotonic() > deadline:
            return state
        time.sleep(2)


def load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError, TypeError):
        return None


def save(path, data):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")


def main():
    module = AnsibleModule(
        argument_spec={
            "before": {"type": "str"},
            "expect": {"type": "dict", "default": {}},
            "lab_marker": {"type": "path"},
            "record": {"type": "path"},
            "record_kernel": {"type": "str"},
            "settle_timeout": {"type": "int", "default": 300},
        },
        supports_check_mode=True,
    )
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    record = load(p["record"]) if p["record"] else None
    token = boot.boot_token(host)
    if p["before"] is None:
        module.exit_json(**plan.result(boot=token, seen={"boot": token}, record=record))

    seen = {
        "boot": token,
        "systemd": systemd_state(module, p["settle_timeout"]),
        "kernel": platform.kernel_release(host),
        "page_size": platform.page_size(host),
        "driver": platform.driver_version(host),
        "cmdline": (host.read(boot.CMDLINE, "") or "").strip(),
        "marker": p["lab_marker"] if p["lab_marker"] and os.path.exists(p["lab_marker"]) else None,
    }
    expect = dict(p["expect"], boot=p["before"])
    verdict = kernel_plan.gate(expect, seen, container=bool(platform.container(host)))
    if verdict["ok"] and p["record"]:
        # What the gate read and what it could not (a lab node runs the host's kernel): the record says which.
        checked = ["new boot", "systemd"] + [n for n, key in GATED if expect.get(key)
                                             and not any(u.startswith(n + " ") for u in verdict["unchecked"])]
        wanted = {"kernel": p["record_kernel"] or expect.get("kernel"), "boot": token, "checked": checked,
                  "unchecked": verdict["unchecked"]}
        if wanted != record:
            plan.change(p["record"], json.dumps(wanted, sort_keys=True), json.dumps(record, sort_keys=True),
                        "record %s as running in %s" % (wanted["kernel"], p["record"]),
                        lambda: save(p["record"], wanted))
            record = wanted
    module.exit_json(**plan.result(boot=token, seen=seen, verdict=verdict, record=record))


if __name__ == "__main__":
    main()
