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
  - Puts O(cmdline) (C(kho=off) in the recipe) on every boot's kernel command line through
    C(/etc/default/grub.d/zz-ds41f-cmdline.cfg), which adds each parameter that no file before it sets, and runs
    C(update-grub) when that file changes. A node whose running command line (C(/proc/cmdline)) lacks one needs a
    boot - a decision of C(none) or C(make-default) becomes C(reboot) - and each missing parameter is a finding
    (RV(findings)) whose fix is the stage with its reboot consent. Without C(kho=off), C(ibv_reg_mr) fails with
    ENOMEM on the 7.0 kernels (Kexec HandOver's scratch memory is migrate-CMA).
  - With O(pin) false (a 4 KiB shape, which keeps whatever kernel it runs) only the command line is decided.
  - A lab node (a container) has no bootloader of its own; it changes nothing there and decides from
    O(record), the release the node's last passed gate recorded (the stock release before any). The command
    line needs a DGX Spark; elsewhere it is left alone and listed in RV(skipped_checks) with the reason.
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
  cmdline:
    description:
      - Parameters every boot's kernel command line sets (C(name=value) or a flag). An empty list removes the
        drop-in; unset leaves the drop-in and the command line alone.
    type: list
    elements: str
  pin:
    description: Pin the entry of O(want) (false - leave GRUB_DEFAULT alone and decide only on O(cmdline)).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reads grub.cfg, grubenv, the pins and /proc/cmdline; changes nothing in check mode.
  diff_mode:
    support: full
    description: The pin file, the command-line drop-in and next_entry before and after.
  idempotent:
    support: full
    description: A second run finds the pin, the drop-in and next_entry as wanted.
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

- name: A 4 KiB shape keeps its kernel; kho=off on its command line
  dgxspark.ds41f.grub_boot:
    want: 7.0.0-1019-nvidia
    stock: 7.0.0-1019-nvidia
    pin: false
    cmdline: [kho=off]
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
boots:
  description: The release the node runs after the boot the decision names (O(want), or with O(pin) false the one
    it runs now).
  returned: always
  type: str
findings:
  description: One per O(cmdline) parameter the running command line lacks (severity error, the fix a command).
  returned: always
  type: list
  elements: dict
skipped_reason:
  description: Why GRUB was left alone (a container).
  returned: in a container
  type: str
skipped_checks:
  description: The command line's check, C({check, reason}), where it was not made (not a DGX Spark).
  returned: when O(cmdline) was not checked
  type: list
  elements: dict
"""

import json
import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, obj, write_file
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

BACKED_UP = ("/etc/default/grub", "/etc/default/grub.d", boot.GRUB_CFG, boot.GRUBENV)
# A shape that keeps its kernel (O(pin) false): no boot for the kernel's sake.
NO_BOOT = {"action": "none", "pin": None, "entry": None}


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
        "cmdline": {"type": "list", "elements": "str"},
        "pin": {"type": "bool", "default": True},
    },
    supports_check_mode=True,
)
REBOOT_FIX = "ds41f run kernel -e '{\"kernel_reboot_ok\": true}'"


def cmdline_check(host, params):
    """(missing parameters, skipped_checks): the command line is read on a DGX Spark only."""
    if not params:
        return [], []
    reason = platform.not_spark(host)
    if reason:
        return [], [{"check": "%s on the kernel command line" % " ".join(params), "reason": reason}]
    return boot.missing_params(host.read(boot.CMDLINE, ""), params), []


def cmdline_findings(missing, running_line, cause):
    return [{"setting": "kernel command line %s" % param, "expected": "%s on /proc/cmdline" % param,
             "found": "not set (the node booted with: %s)" % (" ".join(boot.parse_cmdline(running_line)["params"])
                                                              or "nothing"),
             "fix": REBOOT_FIX, "severity": "error", "object": obj("cmdline", param),
             **({"cause": obj(*cause)} if cause else {})} for param in missing]


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    bad = [x for x in p["cmdline"] or [] if not re.fullmatch(kernel_plan.CMDLINE_PARAM, x)]
    if bad:
        module.fail_json(msg="cmdline: %r is not a kernel parameter this stage can write (name or name=value of "
                             "letters, digits and . _ - , : + /). Fix: correct kernel_cmdline in group_vars/all/"
                             "kernel.yml." % bad[0])
    if platform.container(host):
        running = kernel_plan.lab_running(load_record(p["record"]), p["stock"])
        decided = kernel_plan.boot_plan(p["want"], p["stock"], running, None) if p["pin"] else NO_BOOT
        _, skipped = cmdline_check(host, p["cmdline"] or [])
        module.exit_json(**plan.result(running=running, next_entry=None, skipped_reason="GRUB not applied: container",
                                       boots=p["want"] if p["pin"] else running, findings=[],
                                       **({"skipped_checks": skipped} if skipped else {}), **decided))
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
            "default": boot.parse_grub_default(pin_file)}) if p["pin"] else NO_BOOT
    except kernel_plan.PlanError as exc:
        module.fail_json(msg=str(exc))
    missing, skipped = cmdline_check(host, p["cmdline"] or [])
    decided = kernel_plan.with_cmdline(decided, missing)

    def run(*argv):
        module.run_command(list(argv), check_rc=True)

    wanted = kernel_plan.pin_text(decided["pin"]) if p["pin"] else pin_file
    dropin = host.read(kernel_plan.CMDLINE_FILE)
    if p["cmdline"] is None or skipped:  # left alone
        wanted_dropin = dropin
    else:
        wanted_dropin = kernel_plan.cmdline_text(p["cmdline"]) if p["cmdline"] else None
    if (pin_file != wanted or dropin != wanted_dropin) and not os.path.exists(p["backup_dir"]):
        plan.change(p["backup_dir"], "copies of " + ", ".join(BACKED_UP), None,
                    "copy the bootloader files to %s" % p["backup_dir"], lambda: backup(p["backup_dir"]), row=False)
    if wanted_dropin is not None:
        plan.manages("file", kernel_plan.CMDLINE_FILE)
    if dropin != wanted_dropin:
        def put_cmdline():
            if wanted_dropin is None:
                os.remove(kernel_plan.CMDLINE_FILE)
            else:
                write_file(kernel_plan.CMDLINE_FILE, wanted_dropin)
            if pin_file == wanted:  # else the pin's update-grub below takes this file in too
                run("update-grub")
                run("grub-script-check", boot.GRUB_CFG)
        plan.change(kernel_plan.CMDLINE_FILE, wanted_dropin, dropin, "%s %s, then update-grub" % (
            "remove" if wanted_dropin is None else "write", kernel_plan.CMDLINE_FILE), put_cmdline,
            fix="ds41f run kernel", about=("file", kernel_plan.CMDLINE_FILE))
    if pin_file != wanted:
        def pin():
            write_file(kernel_plan.PIN_FILE, wanted)
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
    findings = cmdline_findings(missing, host.read(boot.CMDLINE, ""), ("file", kernel_plan.CMDLINE_FILE)
                                if dropin != wanted_dropin else None)
    module.exit_json(**plan.result(running=running, next_entry=pending, boots=p["want"] if p["pin"] else running,
                                   findings=findings, **({"skipped_checks": skipped} if skipped else {}), **decided))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
