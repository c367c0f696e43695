# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: lldp_neighbors
short_description: Read what LLDP hears on each ConnectX-7 netdev of a node
version_added: 0.1.0
description:
  - Runs C(lldpctl -f keyvalue) and returns, per local netdev, the neighbour's system name, port and
    management address.
  - With O(refresh), first asks lldpd to send its frames now (C(lldpcli update)) and waits until every
    CX7 netdev with carrier has exactly one neighbour (a moved cable leaves the old one listed until its
    TTL runs out), or O(wait) seconds pass, so freshly started daemons and re-plugged cables are seen
    without waiting for the next transmit interval.
  - Reads only; the node's configuration is not changed (C(lldpcli update) only sends frames). Where
    lldpd is not installed or not running, returns no neighbours and RV(running=false) instead of failing,
    so a check-mode run on a fresh node reports rather than stops.
options:
  netdevs:
    description: The netdevs to wait for (the node's CX7 netdevs).
    type: list
    elements: str
    default: []
  refresh:
    description: Send LLDP frames now and wait for neighbours.
    type: bool
    default: false
  wait:
    description: Seconds to wait for neighbours with O(refresh).
    type: int
    default: 20
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: LLDP neighbours of the CX7 netdevs
  dgxspark.ds41f.lldp_neighbors:
    netdevs: "{{ spark_links | map(attribute='netdev') }}"
    refresh: true
  register: lldp
"""

RETURN = r"""
running:
  description: Whether lldpd answered; without it C(neighbors) is empty.
  returned: always
  type: bool
neighbors:
  description: Per local netdev, what is on the other end.
  returned: always
  type: dict
  sample: {enp1s0f0np0: {name: dgx2, port: enp1s0f1np1, mac: "aa:96:eb:c0:8a:b9", mgmt_ip: 172.30.90.12,
                         age: 22, others: 0}}
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import links as live
from ansible_collections.dgxspark.ds41f.plugins.module_utils import lldp

MODULE_SPEC = dict(
    argument_spec={
        "netdevs": {"type": "list", "elements": "str", "default": []},
        "refresh": {"type": "bool", "default": False},
        "wait": {"type": "int", "default": 20},
    },
    supports_check_mode=True,
)


def run(module):

    def read():
        """Neighbours, or None when lldpd is not installed or not running (e.g. in check mode before it is)."""
        if module.get_bin_path("lldpctl") is None:
            return None
        rc, out, _ = module.run_command(["lldpctl", "-f", "keyvalue"])
        return lldp.parse(out) if rc == 0 else None

    found = read()
    if found is None:
        module.exit_json(changed=False, neighbors={}, running=False,
                         msg="lldpd is not running here, so no neighbour is known. Fix: run the fabric or discover "
                             "playbook, which installs and starts it.")
    if module.params["refresh"]:
        module.run_command(["lldpcli", "update"])
        deadline = time.monotonic() + module.params["wait"]
        while True:
            state = live.read(module.run_command)
            waiting = [n for n in module.params["netdevs"] if state.get(n, {}).get("carrier")
                       and (n not in found or found[n]["others"])]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(0.5)
            found = read() or {}
    module.exit_json(changed=False, neighbors=found, running=True)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
