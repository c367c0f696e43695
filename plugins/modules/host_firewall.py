# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: host_firewall
short_description: The node's own nftables table (inet ds41f), persisted by a unit, and its live rules audited
version_added: 0.1.0
description:
  - Keeps one nftables table of the collection's own, C(inet ds41f), hooked on input before Docker's and
    Tailscale's chains with a drop policy. It accepts connections already made, loopback, everything from the
    cluster's nodes (their management and fabric addresses), SSH from O(ssh.sources) or on O(ssh.interfaces), the
    API port from O(api.sources) (the head only), needed ICMP, and the site's O(allow) openings. Every other new
    connection is dropped. Other tables (Docker's, Tailscale's) are never touched.
  - The rules live in O(path), which a oneshot unit (O(unit)) loads at boot before the network is up. The file
    replaces only this table, in one transaction.
  - The live table is compared with what the file gives, both as C(nft) lists them (the wanted table is listed
    after loading it into a network namespace of its own, so the same nft version writes both). A rule deleted,
    one added by hand, a changed policy or a missing table is a difference, named by its rule.
  - Refuses, before anything is written, rules that would not accept a new SSH connection from the address the
    controller connects from (C(SSH_CONNECTION)), naming the variable to set.
  - Installs the distribution's C(nftables) package when C(nft) is missing (apt).
  - With O(state=absent) the table, the file and the unit are removed.
options:
  state:
    description: Whether the firewall is there.
    type: str
    choices: [present, absent]
    default: present
  path:
    description: The rules file the unit loads.
    type: path
    default: /etc/ds41f/firewall.nft
  unit:
    description: The oneshot unit that loads O(path) at boot.
    type: str
    default: ds41f-firewall.service
  nodes:
    description: The cluster's nodes (C(spark_nodes)); each C(address) is accepted.
    type: list
    elements: dict
    default: []
  cables:
    description: The cluster's cables (C(spark_cables)); both ends' C(addresses) are accepted.
    type: list
    elements: dict
    default: []
  ssh:
    description: Where SSH is accepted from.
    type: dict
    default: {}
    suboptions:
      port:
        description: SSH's port.
        type: int
        default: 22
      sources:
        description: The networks (CIDR) SSH accepts new connections from.
        type: list
        elements: str
        default: []
      interfaces:
        description: The interfaces SSH accepts new connections on from anyone.
        type: list
        elements: str
        default: []
  api:
    description: The API port and who may reach it; given only on the node that serves it.
    type: dict
    suboptions:
      port:
        description: The port the API listens on.
        type: int
        required: true
      sources:
        description: The networks (CIDR) that may reach the API.
        type: list
        elements: str
        default: []
  allow:
    description: The site's own openings, each C(port), C(proto) (tcp or udp) and C(sources).
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    support: full
    description: Reads the file, the unit and the live table; writes nothing in check mode. The wanted table is
      listed inside a network namespace of its own, which changes nothing on the node.
  diff_mode:
    support: full
    description: The file, the unit and the live table before and after.
  idempotent:
    support: full
    description: A second run finds the file, the unit and the table as wanted.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The node's firewall
  dgxspark.ds41f.host_firewall:
    nodes: "{{ spark_nodes }}"
    cables: "{{ spark_cables }}"
    ssh: {port: 22, sources: ["{{ spark_management_network }}"], interfaces: []}
    api: "{{ {'port': serve_port, 'sources': serve_clients} if spark_is_head else omit }}"
"""

RETURN = r"""
actions:
  description: What was (or in check mode would be) done.
  returned: always
  type: list
  elements: str
drift:
  description: Differences found (setting, expected, found, fix, object).
  returned: always
  type: list
  elements: dict
rules:
  description: The live table's rules as nft lists them (one per line), empty when the table is missing.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import firewall, packages
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, write_file

UNIT_DIR = "/etc/systemd/system"


def unit_text(path):
    return "\n".join([
        "# Written by dgxspark.ds41f (the firewall stage).",
        "[Unit]",
        "Description=ds41f host firewall (nftables table %s)" % firewall.TABLE,
        "DefaultDependencies=no",
        # Loaded before any interface is up; after nftables.service, whose stock config flushes the whole ruleset.
        "Before=network-pre.target",
        "Wants=network-pre.target",
        "After=local-fs.target nftables.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=/usr/sbin/nft -f %s" % path,
        "ExecReload=/usr/sbin/nft -f %s" % path,
        "",
        "[Install]",
        "WantedBy=sysinit.target",
        "",
    ])


def listed(module, text=None):
    """The table as nft lists it: the live one, or (``text``) the wanted one loaded into a namespace of its own."""
    if text is None:
        rc, out, _ = module.run_command(["nft", "-s", "list", "table", firewall.FAMILY, firewall.NAME])
        return out if rc == 0 else None
    rc, out, err = module.run_command(["unshare", "--net", "sh", "-c", 'nft -f - && nft -s list table %s %s' % (
        firewall.FAMILY, firewall.NAME)], data=text, binary_data=True)
    if rc != 0:
        module.fail_json(msg="the wanted firewall rules do not load into nft (%s). Fix: correct the firewall "
                         "variables it names." % (err.strip() or out.strip()))
    return out


def lines(text):
    return [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]


def rule_difference(wanted, live):
    """What differs, by rule: those missing from the live table and those it has that the site does not."""
    want, have = lines(wanted), lines(live)
    missing = [line for line in want if line not in have]
    extra = [line for line in have if line not in want]
    parts = ["missing: %s" % line for line in missing] + ["not declared: %s" % line for line in extra]
    return "; ".join(parts) or "the same rules in another order"


def client_address():
    """The address the controller's SSH connection comes from, or None (a local run)."""
    words = os.environ.get("SSH_CONNECTION", "").split()
    return words[0] if words else None


def arriving_interface(module, client):
    rc, out, _ = module.run_command(["ip", "-j", "route", "get", client])
    try:
        return json.loads(out)[0].get("dev") if rc == 0 else None
    except (ValueError, IndexError, AttributeError):
        return None


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


MODULE_SPEC = dict(
    argument_spec={
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "path": {"type": "path", "default": "/etc/ds41f/firewall.nft"},
        "unit": {"type": "str", "default": "ds41f-firewall.service"},
        "nodes": {"type": "list", "elements": "dict", "default": []},
        "cables": {"type": "list", "elements": "dict", "default": []},
        "ssh": {"type": "dict", "default": {}, "options": {
            "port": {"type": "int", "default": 22},
            "sources": {"type": "list", "elements": "str", "default": []},
            "interfaces": {"type": "list", "elements": "str", "default": []}}},
        "api": {"type": "dict", "options": {
            "port": {"type": "int", "required": True},
            "sources": {"type": "list", "elements": "str", "default": []}}},
        "allow": {"type": "list", "elements": "dict", "default": []},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    plan = Plan(module, fix="ds41f run firewall")  # every row's fix: the operator's command
    unit_path = os.path.join(UNIT_DIR, p["unit"])
    table = ("nft_table", firewall.TABLE)
    live = listed(module) if packages.present("nft") else None
    if p["state"] == "absent":
        if module.run_command(["systemctl", "is-enabled", p["unit"]])[1].strip() == "enabled":
            plan.change("%s enabled" % p["unit"], "disabled", "enabled", "systemctl disable %s" % p["unit"],
                        lambda: module.run_command(["systemctl", "disable", p["unit"]], check_rc=True),
                        about=("unit", p["unit"]))
        for path in (p["path"], unit_path):
            if read(path) is not None:
                plan.change(path, None, read(path), "remove %s" % path, lambda path=path: os.remove(path),
                            about=("file", path))
        if live is not None:
            plan.change(firewall.TABLE, None, "present", "nft delete table %s" % firewall.TABLE,
                        lambda: module.run_command(["nft", "delete", "table", firewall.FAMILY, firewall.NAME],
                                                   check_rc=True), about=table)
        module.exit_json(**plan.result(rules=lines(live)))

    if not packages.ensure(module, plan, "nft", "nftables"):  # check mode: the rest would follow the install
        module.exit_json(**plan.result(rules=[]))
    if live is None:
        live = listed(module)
    nodes = firewall.node_addresses(p["nodes"], p["cables"])
    try:
        wanted = firewall.ruleset(nodes, p["ssh"], p["api"], p["allow"])
    except firewall.FirewallError as exc:
        module.fail_json(msg=str(exc))
    client = client_address()
    if not firewall.accepts(client, nodes, p["ssh"], client and arriving_interface(module, client)):
        module.fail_json(msg="firewall_ssh_sources: the controller connects from %s, which these rules would not "
                         "accept for a new SSH connection (sources %s, interfaces %s): the next run could not "
                         "reach this node. Fix: add the controller's network to firewall_ssh_sources, or its "
                         "interface to firewall_ssh_interfaces." % (
                             client, ", ".join(p["ssh"].get("sources") or []) or "none",
                             ", ".join(p["ssh"].get("interfaces") or []) or "none"))
    for obj, path, text in (("file", p["path"], wanted), ("file", unit_path, unit_text(p["path"]))):
        if read(path) != text:
            plan.change(path, text, read(path), "write %s" % path,
                        lambda path=path, text=text: write_file(path, text), about=(obj, path))
        plan.file_attributes(path, "0644")
    if read(unit_path) != unit_text(p["path"]):
        plan.change("%s (systemd's view)" % p["unit"], "reloaded", "stale", "systemctl daemon-reload",
                    lambda: module.run_command(["systemctl", "daemon-reload"], check_rc=True), row=False)
    plan.manages("unit", p["unit"], enabled=True)
    rc, enabled, _ = module.run_command(["systemctl", "is-enabled", p["unit"]])
    if enabled.strip() != "enabled":
        plan.change("%s enabled" % p["unit"], "enabled", enabled.strip() or "not found",
                    "systemctl enable %s" % p["unit"],
                    lambda: module.run_command(["systemctl", "enable", p["unit"]], check_rc=True),
                    about=("unit", p["unit"]))
    plan.manages("nft_table", firewall.TABLE)
    expected = listed(module, wanted)
    if live != expected:
        plan.change("%s rules" % firewall.TABLE, "the rules of %s" % p["path"],
                    "table missing" if live is None else rule_difference(expected, live), "nft -f %s" % p["path"],
                    lambda: module.run_command(["nft", "-f", p["path"]], check_rc=True), about=table,
                    diff=(live, expected))
    module.exit_json(**plan.result(rules=lines(live)))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
