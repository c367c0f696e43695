# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: sshd_effective
short_description: The running sshd's effective configuration has the given settings
version_added: 0.2.0
description:
  - Reads C(sshd -T) (the configuration sshd computes from its files, every drop-in applied) and checks that each
    setting has the given value.
  - sshd keeps the first value it reads, so an earlier line of C(sshd_config) or an earlier drop-in can override
    the one the host baseline writes. A setting that differs names, as its cause, the file that decides it (the
    first that sets it, C(sshd_config) with its C(Include) globs read in place and lines after a C(Match) left
    out), or O(path) when no file sets it. When sshd does not read O(path) at all (C(sshd_config) has no C(Include)
    of its folder), the entry says so and names no cause.
  - Outside check mode it fails, with one drift entry per setting that differs, when any does; in check mode (the
    doctor's audit) it returns those entries and does not fail.
options:
  settings:
    description: Setting name (as in sshd_config) to value.
    type: dict
    required: true
  path:
    description: The drop-in that sets O(settings) (the host baseline's C(01-ds41f-recovery.conf)).
    type: path
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
    path: /etc/ssh/sshd_config.d/01-ds41f-recovery.conf
"""

RETURN = r"""
differing:
  description: The settings whose effective value differs.
  returned: always
  type: list
  elements: str
drift:
  description: One entry per setting that differs, its object C(sshd <name>) and, where a file decides it, that
    file as its cause.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import config_layers as layers
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host


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


def entry(host, name, wanted, value, path):
    """The drift entry of one setting that differs, with the file that decides it as its cause."""
    layout = layers.Sshd(path or layers.Sshd.MAIN)
    first = next((e for e in layout.entries(host, []) if e.key == name.lower()), None)
    row = {"setting": "sshd effective %s" % name, "expected": wanted, "object": {"kind": "sshd", "name": name}}
    if first is not None and layout.same(first.key, first.value, wanted):
        row["found"] = "%s (sshd -T), though %s line %d sets %s first" % (value, first.path, first.line, wanted)
        fix = "read sshd -T and %s on the node: the files set %s %s first" % (layers.Sshd.MAIN, name, wanted)
    elif first is not None:
        real = layers.resolve(host, first.path)
        row.update(found="%s (sshd -T), from %s line %d" % (value, real, first.line), cause={"kind": "file",
                                                                                            "name": real})
        fix = "turn off line %d of %s (sshd keeps the first value it reads), then systemctl reload ssh" % (
            first.line, real)
    elif path and not layout.read_by_sshd(layers.Overlay(host, {path: host.read(path) or ""})):  # there or not
        row["found"] = "%s (sshd -T): sshd does not read %s" % (value, path)
        fix = "add 'Include %s/*.conf' as the first line of %s, then systemctl reload ssh" % (
            layout.folder, layers.Sshd.MAIN)
    else:
        row["found"] = "%s (sshd -T): no file sets it" % value
        fix = "write %s, then systemctl reload ssh" % path if path else "set %s %s in %s" % (name, wanted,
                                                                                          layers.Sshd.MAIN)
        if path:
            row["cause"] = {"kind": "file", "name": path}
    row["fix"] = fix
    return row


MODULE_SPEC = dict(argument_spec={"settings": {"type": "dict", "required": True},
                                  "path": {"type": "path"},
                                  "sshd": {"type": "path", "default": "/usr/sbin/sshd"}},
                   supports_check_mode=True)


def run(module):
    rc, out, err = module.run_command([module.params["sshd"], "-T"])
    if rc != 0:
        module.fail_json(msg="%s -T failed: %s. Fix: run it on the node and correct what it names." % (
            module.params["sshd"], (err or out).strip()))
    found = differing(out, module.params["settings"])
    host = Host("/")
    drift = [entry(host, name, wanted, value, module.params["path"]) for name, wanted, value in found]
    result = {"changed": False, "differing": [name for name, _, _ in found], "drift": drift}
    if found and not module.check_mode:
        module.fail_json(msg="; ".join("sshd -T does not show %s %s (it shows %s). Fix: %s" % (
            name, wanted, value, d["fix"]) for (name, wanted, value), d in zip(found, drift, strict=True)), **result)
    module.exit_json(**result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
