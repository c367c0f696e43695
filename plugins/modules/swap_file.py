# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: swap_file
short_description: A swap file for one page size beside the original, both noauto in fstab
version_added: 0.1.0
description:
  - Creates O(path) (O(size_mib), mode 0600) and formats it with C(mkswap --pagesize O(page_size)); a file
    whose header was made for another page size is formatted again, unless it is active.
  - Keeps a copy of fstab in O(backup) before its first edit, sets the O(original) swap line C(noauto) and adds
    O(path) as C(noauto); the kernel stage's memory service turns on the file that matches the running page
    size at boot.
  - Never turns swap on or off itself, and never deletes or reformats an active swap area. (In a lab container
    /proc/swaps is the host's; a swapon there would add swap to the host.)
  - O(state=absent) deletes O(path) unless it is active, and puts the original fstab line back from O(backup).
options:
  path:
    description: The swap file for O(page_size).
    type: path
    required: true
  size_mib:
    description: Its size in MiB.
    type: int
    default: 16384
  page_size:
    description: The page size its header is made for.
    type: int
    default: 65536
  original:
    description: The swap file the OS installed (it stays, set noauto).
    type: path
    default: /swap.img
  fstab:
    description: The fstab to edit.
    type: path
    default: /etc/fstab
  backup:
    description: fstab as it was before the first edit.
    type: path
    default: /var/lib/ds41f/kernel/fstab.before
  state:
    description: present or absent.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Reads the file header, /proc/swaps and fstab; changes nothing in check mode.
  diff_mode:
    support: full
    description: fstab before and after, and the file's state.
  idempotent:
    support: full
    description: A file of the right size and header and an fstab already edited are left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: 64 KiB swap beside the original
  dgxspark.ds41f.swap_file:
    path: /swap-64k.img
    size_mib: 16384
    page_size: 65536
"""

RETURN = r"""
active:
  description: Active swap areas (from /proc/swaps; in a container these are the host's).
  returned: always
  type: list
  elements: str
header_page_size:
  description: The page size the file's header was made for, or null.
  returned: always
  type: int
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import swap_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host


def header(path):
    try:
        with open(path, "rb") as handle:
            return swap_plan.header_page_size(handle.read(65536))
    except OSError:
        return None


def write_text(path, text):
    tmp = path + ".ds41f-tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    shutil.copymode(path, tmp)
    os.replace(tmp, path)


def make(module, path, size, page_size):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, 0)
        os.posix_fallocate(fd, 0, size)  # glibc falls back to writing zeroes where fallocate is unsupported
    finally:
        os.close(fd)
    os.chmod(path, 0o600)
    module.run_command(["mkswap", "--pagesize", str(page_size), path], check_rc=True)


def edit_fstab(plan, path, current, wanted):
    if wanted != current:
        plan.change(path, wanted, current, "edit %s" % path, lambda: write_text(path, wanted))


MODULE_SPEC = dict(
    argument_spec={
        "path": {"type": "path", "required": True},
        "size_mib": {"type": "int", "default": 16384},
        "page_size": {"type": "int", "default": 65536},
        "original": {"type": "path", "default": "/swap.img"},
        "fstab": {"type": "path", "default": "/etc/fstab"},
        "backup": {"type": "path", "default": "/var/lib/ds41f/kernel/fstab.before"},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    active = swap_plan.active_swaps(host.read("/proc/swaps", ""))
    fstab = host.read(p["fstab"], "")
    found_page = header(p["path"]) if os.path.exists(p["path"]) else None
    size = p["size_mib"] * 1024 * 1024

    if p["state"] == "present":
        if not os.path.exists(p["backup"]):
            def backup():
                os.makedirs(os.path.dirname(p["backup"]), mode=0o700, exist_ok=True)
                shutil.copy2(p["fstab"], p["backup"])
            plan.change(p["backup"], "copy of %s" % p["fstab"], None, "keep %s as %s" % (p["fstab"], p["backup"]),
                        backup)
        exists = os.path.exists(p["path"])
        found = "%d MiB, %s-byte pages" % (os.path.getsize(p["path"]) // 1048576, found_page) if exists else None
        wanted = "%d MiB, %d-byte pages" % (p["size_mib"], p["page_size"])
        if found != wanted:
            if p["path"] in active:
                module.fail_json(msg="%s is an active swap area (%s), not the wanted %s: it is never reformatted "
                                     "while in use. Fix: swapoff it in a maintenance window, then re-run." % (
                                         p["path"], found, wanted))
            plan.change(p["path"], wanted, found, "create %s and mkswap --pagesize %d" % (p["path"], p["page_size"]),
                        lambda: make(module, p["path"], size, p["page_size"]))
        edit_fstab(plan, p["fstab"], fstab, swap_plan.plan_fstab(fstab, p["original"], p["path"]))
    else:
        if os.path.exists(p["path"]):
            if p["path"] in active:
                module.fail_json(msg="%s is an active swap area and is never deleted. Fix: boot the kernel whose "
                                     "page size the original swap matches, then re-run." % p["path"])
            plan.change(p["path"], None, "%d MiB" % (os.path.getsize(p["path"]) // 1048576), "delete %s" % p["path"],
                        lambda: os.remove(p["path"]))
        before = host.read(p["backup"], "")
        edit_fstab(plan, p["fstab"], fstab, swap_plan.revert_fstab(fstab, before, p["original"], p["path"]))
        if os.path.exists(p["backup"]):
            plan.change(p["backup"], None, "present", "remove %s" % p["backup"], lambda: os.remove(p["backup"]))
    module.exit_json(**plan.result(active=active, header_page_size=found_page))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
