# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: grub_boot
short_description: Decide whether a node needs a boot into a kernel, and set GRUB for it
version_added: 0.1.0
description:
  - Reads the running kernel, the menu (grub.cfg), grubenv and the pin, and decides (RV(action)) - C(none),
    C(make-default) (it runs O(want) after a passed trial; the pin moves to it), C(trial) (O(want) boots once,
    the stock entry stays pinned) or C(reboot) (O(want) is the stock kernel, already pinned).
  - Pins the entry the decision names (its submenu path in grub.cfg, never a menu number) in
    C(/etc/default/grub.d/zz-ds41f-kernel.cfg) and runs C(update-grub) when the pin changes; before the first
    change it copies /etc/default/grub, /etc/default/grub.d, grub.cfg and grubenv to O(backup_dir).
  - With O(arm), arms the one-time boot of a trial (C(grub-reboot)); O(cancel_once) clears a pending one.
  - A lab node (a container) has no bootloader of its own; it changes nothing there and decides from
    O(record), the release the node's last passed gate recorded (the stock release before any).
options:
  want:
    description: The kernel release the node should run.
    type: str
    required: true
  stock:
    description: The stock kernel release (pinned until a trial of O(want) passed).
    type: str
    required: true
  record:
    description: The gate's record of the release a lab node runs (read in a container only).
    type: path
    default: /var/lib/ds41f/kernel/boot.json
  arm:
    description: For a trial, arm the one-time boot of O(want) now.
    type: bool
    default: false
  cancel_once:
    description: Clear a pending one-time entry.
    type: bool
    default: false
  backup_dir:
    description: Where the bootloader files are copied before the first change.
    type: path
    default: /var/lib/ds41f/kernel/before
attributes:
  check_mode:
    support: full
    description: Reads grub.cfg, grubenv and the pins; changes nothing in check mode.
  diff_mode:
    support: full
    description: The pin file and next_entry before and after.
  idempotent:
    support: full
    description: A second run finds the pin and next_entry as wanted.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Pin the stock kernel; say whether the 64 KiB kernel needs a boot
  dgxspark.ds41f.grub_boot:
    want: 7.0.0-1019-nvidia-64k
    stock: 7.0.0-1019-nvidia
  register: boot_plan

- name: Arm the one-time boot of the 64 KiB kernel
  dgxspark.ds41f.grub_boot:
    want: 7.0.0-1019-nvidia-64k
    stock: 7.0.0-1019-nvidia
    arm: true
"""

RETURN = r"""
action:
  description: none, make-default, trial or reboot.
  returned: always
  type: str
running:
  description: The release the node runs (in a lab node, the recorded one).
  returned: always
  type: str
pin:
  description: The pinned entry path (null in a container).
  returned: always
  type: str
next_entry:
  description: The pending one-time entry after the run, or null.
  returned: always
  type: str
skipped_reason:
  description: Why GRUB was left alone (a container).
  returned: in a container
  type: str
"""

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

BACKED_UP = ("/etc/default/grub", "/etc/default/grub.d", boot.GRUB_CFG, boot.GRUBENV)


def backup(dest):
    os.makedirs(dest, mode=0o700)
    for src in BACKED_UP:
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, os.path.basename(src)))
        elif os.path.exists(src):
            shutil.copy2(src, dest)


def load_record(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


MODULE_SPEC = dict(
    argument_spec={
        "want": {"type": "str", "required": True},
        "stock": {"type": "str", "required": True},
        "record": {"type": "path", "default": "/var/lib/ds41f/kernel/boot.json"},
        "arm": {"type": "bool", "default": False},
        "cancel_once": {"type": "bool", "default": False},
        "backup_dir": {"type": "path", "default": "/var/lib/ds41f/kernel/before"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    if platform.container(host):
        running = kernel_plan.lab_running(load_record(p["record"]), p["stock"])
        decided = kernel_plan.boot_plan(p["want"], p["stock"], running, None)
        module.exit_json(**plan.result(running=running, next_entry=None, skipped_reason="GRUB not applied: container",
                                       **decided))
    grub = boot.read(host)
    if not grub["present"]:
        module.fail_json(msg="no %s on this node. Fix: the kernel stage needs GRUB (DGX OS boots with it)." %
                         boot.GRUB_CFG)
    running = platform.kernel_release(host)
    pending = grub["env"].get("next_entry") or None
    pin_file = host.read(kernel_plan.PIN_FILE)
    try:
        decided = kernel_plan.boot_plan(p["want"], p["stock"], running, {
            "entries": grub["entries"], "next_entry": None if p["cancel_once"] else pending,
            "default": boot.parse_grub_default(pin_file)})
    except kernel_plan.PlanError as exc:
        module.fail_json(msg=str(exc))

    def run(*argv):
        module.run_command(list(argv), check_rc=True)

    wanted = kernel_plan.pin_text(decided["pin"])
    if pin_file != wanted:
        if not os.path.exists(p["backup_dir"]):
            plan.change(p["backup_dir"], "copies of " + ", ".join(BACKED_UP), None,
                        "copy the bootloader files to %s" % p["backup_dir"], lambda: backup(p["backup_dir"]))

        def pin():
            os.makedirs(os.path.dirname(kernel_plan.PIN_FILE), mode=0o755, exist_ok=True)
            with open(kernel_plan.PIN_FILE, "w") as handle:
                handle.write(wanted)
            run("update-grub")
            run("grub-script-check", boot.GRUB_CFG)
        plan.change(kernel_plan.PIN_FILE, wanted, pin_file, "pin %s, then update-grub" % decided["pin"], pin)

    if p["cancel_once"] and pending:
        plan.change("grubenv next_entry", None, pending, "grub-editenv %s unset next_entry" % boot.GRUBENV,
                    lambda: run("grub-editenv", boot.GRUBENV, "unset", "next_entry"))
        pending = None
    if p["arm"] and decided["action"] == "trial":
        if decided["entry"] is None:
            module.fail_json(msg="%s has no GRUB entry yet. Fix: install its packages (kernel_packages) and run "
                                 "update-grub first." % p["want"])
        if pending != decided["entry"]:
            plan.change("grubenv next_entry", decided["entry"], pending, "grub-reboot '%s'" % decided["entry"],
                        lambda: run("grub-reboot", decided["entry"]))
            pending = decided["entry"]
    module.exit_json(**plan.result(running=running, next_entry=pending, **decided))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
