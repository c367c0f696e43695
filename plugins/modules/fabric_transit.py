# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_transit
short_description: Let a ring node forward plain IP between its fabric neighbours (ring transit)
version_added: 0.1.0
description:
  - On the switchless ring, ranks two apart have no cable. For plain IP between them (NFS, ssh, probes;
    RDMA never needs it) each node forwards between its CX7 netdevs - C(net.ipv4.ip_forward=1), live and in
    C(/etc/sysctl.d), and one C(ACCEPT) rule per pair of CX7 netdevs in Docker's C(DOCKER-USER) chain,
    because Docker's C(FORWARD) drop policy looks exactly like a dead cable.
  - The rules are kept across reboots by a oneshot unit that re-inserts them after Docker starts.
  - The routes through the neighbours belong to the netplan file (M(dgxspark.ds41f.netplan_cx7)) and are
    made live by M(dgxspark.ds41f.fabric_links).
  - With O(state=absent) the unit, its script, the sysctl file and the rules are removed; the live
    C(ip_forward) is left as it is, because Docker's own networking may need it.
options:
  netdevs:
    description: This node's CX7 netdevs.
    type: list
    elements: str
    required: true
  state:
    description: Whether ring transit is configured.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Reads the sysctl, the rules, the unit and its files, and reports what it would change.
  diff_mode:
    support: full
    description: Each file and setting before and after.
  idempotent:
    support: full
    description: A node that already forwards is left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Ring transit
  dgxspark.ds41f.fabric_transit:
    netdevs: "{{ spark_links | map(attribute='netdev') }}"
    state: present
"""

RETURN = r"""
rules:
  description: The (in, out) netdev pairs accepted in DOCKER-USER.
  returned: always
  type: list
  elements: list
actions:
  description: What was done (or would be, in check mode).
  returned: always
  type: list
  elements: str
drift:
  description: One entry per difference (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.transit import forward_rules

SYSCTL_FILE = "/etc/sysctl.d/60-ds41f-fabric-transit.conf"
SCRIPT = "/usr/local/libexec/ds41f-fabric-transit"
UNIT_NAME = "ds41f-fabric-transit.service"
UNIT = "/etc/systemd/system/" + UNIT_NAME
FORWARD = "/proc/sys/net/ipv4/ip_forward"
CHAIN = "DOCKER-USER"

UNIT_TEXT = """# Written by the dgxspark.ds41f fabric stage (ring transit).
[Unit]
Description=ds41f fabric: accept ring transit between the ConnectX-7 netdevs in DOCKER-USER
After=docker.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%s

[Install]
WantedBy=multi-user.target
""" % SCRIPT


def script_text(rules):
    lines = ["#!/bin/sh",
             "# Written by the dgxspark.ds41f fabric stage (ring transit); run at boot by %s." % UNIT_NAME,
             "set -e",
             "iptables -w -N %s 2>/dev/null || true" % CHAIN]
    for a, b in rules:
        rule = "%s -i %s -o %s -j ACCEPT" % (CHAIN, a, b)
        lines.append("iptables -w -C %s 2>/dev/null || iptables -w -I %s" % (rule, rule))
    return "\n".join(lines) + "\n"


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def write(path, text, mode):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)


MODULE_SPEC = dict(
    argument_spec={
        "netdevs": {"type": "list", "elements": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    },
    supports_check_mode=True,
)


def run(module):
    plan = Plan(module)
    present = module.params["state"] == "present"
    rules = forward_rules([{"netdev": n} for n in module.params["netdevs"]])

    def run(*argv):
        def go():
            rc, out, err = module.run_command(list(argv))
            if rc != 0:
                module.fail_json(msg="%s failed: %s" % (" ".join(argv), (err or out).strip()), actions=plan.actions)
        return go

    def has_rule(a, b):
        if module.get_bin_path("iptables") is None:
            return False
        return module.run_command(["iptables", "-w", "-C", CHAIN, "-i", a, "-o", b, "-j", "ACCEPT"])[0] == 0

    def enable():
        run("systemctl", "daemon-reload")()
        run("systemctl", "enable", UNIT_NAME)()

    def insert(a, b):
        if module.run_command(["iptables", "-w", "-S", CHAIN])[0] != 0:  # no Docker yet: it adopts our chain
            run("iptables", "-w", "-N", CHAIN)()
        run("iptables", "-w", "-I", CHAIN, "-i", a, "-o", b, "-j", "ACCEPT")()

    enabled = module.run_command(["systemctl", "is-enabled", "--quiet", UNIT_NAME])[0] == 0
    ours = read(SCRIPT) is not None or enabled  # absent: only take back rules this module put there
    if not present and enabled:  # before its file goes
        plan.change(UNIT_NAME, "disabled", "enabled", "systemctl disable %s" % UNIT_NAME,
                    run("systemctl", "disable", UNIT_NAME))
    files = {SYSCTL_FILE: ("net.ipv4.ip_forward = 1\n", 0o644), SCRIPT: (script_text(rules), 0o755),
             UNIT: (UNIT_TEXT, 0o644)}
    for path, (text, mode) in files.items():
        found = read(path)
        if present and found != text:
            plan.change(path, text, found, "write %s" % path, lambda p=path, t=text, m=mode: write(p, t, m))
        elif not present and found is not None:
            plan.change(path, None, found, "remove %s" % path, lambda p=path: os.unlink(p))

    if present and not enabled:
        plan.change(UNIT_NAME, "enabled", "disabled", "systemctl daemon-reload; systemctl enable %s" % UNIT_NAME,
                    enable)

    forward = (read(FORWARD) or "").strip()
    if present and forward != "1":
        plan.change("net.ipv4.ip_forward", "1", forward, "sysctl -w net.ipv4.ip_forward=1",
                    run("sysctl", "-w", "net.ipv4.ip_forward=1"))
    if present and rules and module.get_bin_path("iptables") is None:
        module.fail_json(msg="iptables is missing. Fix: install iptables (ring transit needs it).")
    for a, b in rules if present or ours else []:
        live = has_rule(a, b)
        setting = "%s %s -> %s" % (CHAIN, a, b)
        if present and not live:
            plan.change(setting, "ACCEPT", None, "iptables -I %s -i %s -o %s -j ACCEPT" % (CHAIN, a, b),
                        lambda a=a, b=b: insert(a, b))
        elif not present and live:
            plan.change(setting, None, "ACCEPT", "iptables -D %s -i %s -o %s -j ACCEPT" % (CHAIN, a, b),
                        run("iptables", "-w", "-D", CHAIN, "-i", a, "-o", b, "-j", "ACCEPT"))
    module.exit_json(**plan.result(rules=[list(r) for r in rules]))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
