# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_preflight
short_description: Fail, before anything changes, unless a node has every netdev and tool the fabric stage needs
version_added: 0.1.0
description:
  - Reads the node's network devices and checks that every ConnectX-7 netdev of its site links and its
    management netdev exist, and that the tools the stage runs (C(ip), C(ping), C(netplan)) are installed.
  - The fabric playbook runs it on every node first, with C(any_errors_fatal), so a wrong site file or a
    missing cable fails the run before any node is touched, naming the node, the netdev and the fix.
options:
  links:
    description: This node's C(spark_links) from the inventory plugin.
    type: list
    elements: dict
    required: true
  management_interface:
    description: The management netdev (C(spark_management_interface)).
    type: str
    required: true
  node:
    description: The node's name in the site file, used in messages.
    type: str
    required: true
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Every netdev of the site exists on the node
  dgxspark.ds41f.fabric_preflight:
    links: "{{ spark_links }}"
    management_interface: "{{ spark_management_interface }}"
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
netdevs:
  description: The netdevs present on the node.
  returned: always
  type: list
  elements: str
lldpd:
  description: Whether lldpd is installed (the role installs it only when it is not).
  returned: always
  type: bool
drift:
  description: On failure, each missing fabric netdev as a drift row (the doctor's cause, with the cable's far end), its
    C(object) the link (kind C(link), the netdev), C(aspect) C(link) and C(path) the CIDR.
  returned: failure
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import obj

TOOLS = ("ip", "ping", "netplan")


MODULE_SPEC = dict(
    argument_spec={
        "links": {"type": "list", "elements": "dict", "required": True},
        "management_interface": {"type": "str", "required": True},
        "node": {"type": "str", "required": True},
    },
    supports_check_mode=True,
)


def run(module):
    checks.fail_on(module, checks.elements(module.params["links"], "links",
                                           {"netdev": str, "port": int, "pcie": int}))
    node = module.params["node"]
    present = sorted(os.listdir("/sys/class/net"))
    problems, drift = [], []
    for link in module.params["links"]:
        if link["netdev"] not in present:
            far = "%s %s" % (link["peer"], link["peer_netdev"]) if link.get("peer") else "the switch"
            drift.append({"setting": "%s link" % link["netdev"], "expected": "present (cabled to %s)" % far,
                          "found": "missing", "fix": "check the cable at %s %s and %s; in the lab, `ds41f lab up` "
                          "re-wires it" % (node, link["netdev"], far), "object": obj("link", link["netdev"]),
                          "aspect": "link", **({"path": link["cidr"]} if link.get("cidr") else {})})
            problems.append(
                "%s has no netdev %s (port %d, PCIe path %d, cabled to %s in the site file). Fix: check that "
                "the ConnectX-7 driver is loaded and the port is named as on a DGX Spark (`ip link`); in the "
                "lab, `ds41f lab up` again wires the cables." % (node, link["netdev"], link["port"], link["pcie"],
                                                                  far))
    mgmt = module.params["management_interface"]
    if mgmt not in present:
        problems.append("%s has no management netdev %s. Fix: set management_interface (site file, or per "
                        "node) to the netdev that carries the node's management address." % (node, mgmt))
    for tool in TOOLS:
        if module.get_bin_path(tool) is None:
            problems.append("%s lacks the %s command. Fix: install %s." % (
                node, tool, "netplan.io" if tool == "netplan" else "iproute2" if tool == "ip" else "iputils-ping"))
    if problems:
        module.fail_json(msg="fabric preflight failed on %s; nothing was changed:\n%s" % (
            node, "\n".join("  - " + p for p in problems)), problems=problems, netdevs=present, drift=drift)
    module.exit_json(changed=False, netdevs=present, lldpd=module.get_bin_path("lldpd") is not None)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
