# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: sysctl_file
short_description: One /etc/sysctl.d file and, on bare metal only, the running values it sets
version_added: 0.1.0
description:
  - Writes a sysctl.d file holding exactly O(settings) (in order, C(key = value)), so the next boot applies them.
  - Sets the running values that differ through /proc/sys. A global (non-C(net.)) setting is applied only on
    bare metal; in a container (a lab node) its /proc/sys is the host's, so the module reports it as
    not applied (container) and never writes it. C(net.) settings belong to the node's network namespace and
    are applied everywhere.
  - With O(state=absent) the file is removed and, on bare metal, the running values named in O(revert) are set.
  - Reads what systemd-sysctl computes at boot from every sysctl.d folder (C(/etc), C(/run), C(/usr/local/lib),
    C(/usr/lib), C(/lib); the files sorted by name, one per name, the later assignment wins). A line of another
    file that would set one of O(settings) to another value is a drift entry about that file (its object), and is
    turned off (commented out under a line saying why, the rest of that file kept); a package's file under
    C(/usr) or C(/lib) is replaced by an edited copy of the same name in C(/etc/sysctl.d). A running value that
    differs because of such a file names it as its cause. Each setting is declared as an object of kind
    C(setting), named after the folder and the setting (C(/etc/sysctl.d) and C(kernel.panic)).
options:
  path:
    description: The sysctl.d file.
    type: path
    required: true
  settings:
    description: Setting name to value, such as C(kernel.panic=30). Required with O(state=present).
    type: dict
    default: {}
  revert:
    description:
      - Running values set when the file is removed (the kernel defaults), such as C(vm.watermark_boost_factor=15000).
      - With O(settings) given too, only the settings the file held are set back.
    type: dict
    default: {}
  apply:
    description: Also set the running values (never global ones in a container).
    type: bool
    default: true
  state:
    description: Whether the file is there.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Reads the file and /proc/sys; writes nothing in check mode and reports what it would do.
  diff_mode:
    support: full
    description: The file's content before and after, and each running value that would change.
  idempotent:
    support: full
    description: A second run finds the file and the running values as wanted.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Recovery policy sysctls
  dgxspark.ds41f.sysctl_file:
    path: /etc/sysctl.d/95-ds41f-recovery.conf
    settings:
      kernel.panic: 30
      kernel.panic_on_oops: 1

- name: Remove the memory sysctl and restore the kernel default now
  dgxspark.ds41f.sysctl_file:
    path: /etc/sysctl.d/90-ds41f-memory.conf
    settings:
      vm.watermark_boost_factor: 0
    revert:
      vm.watermark_boost_factor: 15000
    state: absent
"""

RETURN = r"""
actions:
  description: What was (or in check mode would be) done.
  returned: always
  type: list
  elements: str
drift:
  description: Differences found (setting, expected, found, fix, object; a running value's cause when a foreign
    file explains it).
  returned: always
  type: list
  elements: dict
not_applied:
  description: Running values left alone, each with the reason.
  returned: always
  type: list
  elements: str
  sample: ["kernel.panic = 30: not applied: container"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import foreign_files
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, write_file
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

HEADER = "# Written by dgxspark.ds41f; remove with its stage's state: absent.\n"


def render(settings):
    return HEADER + "".join("%s = %s\n" % (key, value) for key, value in settings.items())


def proc_path(key):
    return "/proc/sys/" + key.replace(".", "/")


def namespaced(key):
    return key.startswith("net.")


def live_values(module, plan, host, values, container, not_applied, causes=None):
    """Set the running values that differ; ``causes``: {setting: the foreign file that sets it otherwise}."""
    for key, value in values.items():
        want = str(value)
        if container and not namespaced(key):
            not_applied.append("%s = %s: not applied: container" % (key, want))
            continue
        plan.manages("sysctl", key, value=want)
        found = host.read(proc_path(key))
        if found is None:
            module.fail_json(msg="%s: no %s on this kernel. Fix: remove it from the settings." % (key, proc_path(key)))
        found = " ".join(found.split())
        if found != " ".join(want.split()):
            def apply(key=key, want=want):
                with open(proc_path(key), "w") as handle:
                    handle.write(want)
            cause = (causes or {}).get(key)
            plan.change("%s (running)" % key, want, found, "sysctl -w %s=%s" % (key, want), apply,
                        about=("sysctl", key), cause=("file", cause) if cause else None)


MODULE_SPEC = dict(
    argument_spec={
        "path": {"type": "path", "required": True},
        "settings": {"type": "dict", "default": {}},
        "revert": {"type": "dict", "default": {}},
        "apply": {"type": "bool", "default": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    checks.fail_on(module, checks.sysctl_values(p["settings"], "settings"), checks.sysctl_values(p["revert"], "revert"))
    host = module_host(module)
    container = platform.container(host)
    plan, not_applied = Plan(module), []
    current = host.read(p["path"])

    if p["state"] == "present":
        if not p["settings"]:
            module.fail_json(msg="settings: empty. Fix: name at least one setting, or use state: absent.")
        wanted = render(p["settings"])
        if current != wanted:
            plan.change(p["path"], wanted, current, "write %s" % p["path"], lambda: write_file(p["path"], wanted),
                        about=("file", p["path"]))
        plan.file_attributes(p["path"], "0644")
        foreign = foreign_files.audit(plan, host, p["path"], wanted)
        if p["apply"]:
            live_values(module, plan, host, p["settings"], container, not_applied,
                        {mine.name: real for mine, _, real in foreign})
    else:
        if current is not None:
            plan.change(p["path"], None, current, "remove %s" % p["path"], lambda: os.remove(p["path"]),
                        about=("file", p["path"]))
        if p["apply"]:
            keys = p["settings"] or p["revert"]
            live_values(module, plan, host, {k: p["revert"][k] for k in keys if k in p["revert"]}, container,
                        not_applied)
    module.exit_json(**plan.result(not_applied=not_applied))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
