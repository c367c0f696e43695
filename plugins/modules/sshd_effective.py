# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: sshd_effective
short_description: The running sshd's effective configuration has the given settings
version_added: 0.2.0
description:
  - Reads C(sshd -T) (the configuration sshd runs with, every drop-in applied) and checks that each setting
    has the given value.
  - sshd keeps the first value it reads, so an earlier drop-in or C(sshd_config) line can override the one the
    host baseline writes; this names such a setting and the fix.
  - Fails, with one drift entry per setting that differs, when any does.
options:
  settings:
    description: Setting name (as in sshd_config) to value.
    type: dict
    required: true
  sshd:
    description: The sshd binary.
    type: path
    default: /usr/sbin/sshd
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The running sshd has the recovery limits
  dgxspark.ds41f.sshd_effective:
    settings: {ClientAliveInterval: 15, LoginGraceTime: 30}
"""

RETURN = r"""
differing:
  description: The settings whose effective value differs.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule


def differing(effective, settings):
    """[(name, wanted, found)] for every setting whose ``sshd -T`` line is not ``name value`` (lower-case name)."""
    lines = {}
    for line in effective.splitlines():
        key, _, value = line.strip().partition(" ")
        lines.setdefault(key, value)
    out = []
    for name, value in settings.items():
        if lines.get(name.lower()) != str(value):
            out.append((name, str(value), lines.get(name.lower())))
    return out


MODULE_SPEC = dict(argument_spec={"settings": {"type": "dict", "required": True},
                                  "sshd": {"type": "path", "default": "/usr/sbin/sshd"}},
                   supports_check_mode=True)


def run(module):
    rc, out, err = module.run_command([module.params["sshd"], "-T"])
    if rc != 0:
        module.fail_json(msg="%s -T failed: %s. Fix: run it on the node and correct what it names." % (
            module.params["sshd"], (err or out).strip()))
    found = differing(out, module.params["settings"])
    drift = [{"setting": "sshd effective %s" % name, "expected": wanted, "found": value,
              "fix": "remove the earlier setting of %s from /etc/ssh/sshd_config or another drop-in (sshd keeps "
                     "the first value it reads)" % name} for name, wanted, value in found]
    result = {"changed": False, "differing": [name for name, _, _ in found], "drift": drift}
    if found:
        module.fail_json(msg="; ".join("sshd -T does not show %s %s (it shows %s). Fix: %s" % (
            name, wanted, value, d["fix"]) for (name, wanted, value), d in zip(found, drift, strict=True)), **result)
    module.exit_json(**result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
