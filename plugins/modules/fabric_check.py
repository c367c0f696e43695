# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_check
short_description: Check every fabric path of a node and say which end is broken, as a table
version_added: 0.1.0
description:
  - For each ConnectX-7 netdev of the node's site links - the live link state (carrier, MTU, address);
    what LLDP says is on the other end, against the site's cabling; a ping of every peer on the path
    with unfragmentable frames of the full fabric MTU (C(ping -M do -s MTU-28)), with loss and RTT; the
    RoCE v2 GID slot of the path's address; and the negotiated link speed.
  - A failing path with no local link or cable problem is explained by a stray on this node that takes it (a
    permanent neighbour entry for the peer, a route or rule for its address; M(dgxspark.ds41f.fabric_links) names
    and removes it), which its drift entry names as its C(cause) object; failing that, its cause is the far end's
    link. A cable that hears no LLDP neighbour names the far end's C(lldpd) unit as its cause. The doctor folds
    each into its cause's row (or the far node's own row when it did not answer).
  - Returns one row per reading (node, netdev, check, peer, expected, found, status, message) and a
    C(drift) entry per failing row; the message names the broken end, for example C(dgx2 enp1s0f1np1
    reaches dgx4 enp1s0f0np0 (expected dgx3 enp1s0f0np0) - port 1 of dgx2 is cabled to the wrong node).
  - Never fails on a broken path; the fabric playbook merges every node's rows (filter
    C(dgxspark.ds41f.fabric_table)) and gates on them.
  - GID and speed readings need a DGX Spark; elsewhere (the lab) their rows say so and are skipped.
options:
  links:
    description: This node's C(spark_links).
    type: list
    elements: dict
    required: true
  mtu:
    description: The fabric MTU; pings carry frames of exactly this size.
    type: int
    required: true
  gid_index:
    description: The site's GID policy - a slot number every node must use, or C(auto).
    type: raw
    required: true
  speed_mbps:
    description: The link speed the hardware should negotiate, in Mb/s.
    type: int
    required: true
  node:
    description: The node's name in the site file.
    type: str
    required: true
  count:
    description: Pings per peer.
    type: int
    default: 3
  timeout:
    description: Seconds to wait for each reply.
    type: int
    default: 2
attributes:
  check_mode:
    support: full
    description: Reads and pings only; the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
  idempotent:
    support: full
    description: Reads and pings only.
notes:
  - The pings leave through the netdev of the path (C(ping -I)), so a path is only reported good when
    that very cable carries the traffic.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Check the fabric
  dgxspark.ds41f.fabric_check:
    links: "{{ spark_links }}"
    mtu: "{{ spark_mtu }}"
    gid_index: "{{ spark_gid_index }}"
    speed_mbps: 200000
    node: "{{ inventory_hostname }}"
  register: fabric_check
"""

RETURN = r"""
rows:
  description: One row per reading of this node.
  returned: always
  type: list
  elements: dict
  sample:
    - {node: dgx1, netdev: enp1s0f0np0, check: path, peer: dgx2, expected: "9000-byte replies from dgx2 10.12.1.2",
       found: "3/3 replies, avg 0.081 ms", status: ok, message: ok, loss_pct: 0.0, rtt_ms: 0.081}
failing:
  description: How many rows failed.
  returned: always
  type: int
drift:
  description: Failing and warning rows as drift entries (setting, expected, found, fix, and cause for a consequence),
    with C(path) (the CIDR) and C(aspect) - C(reachability) for a path's pings, else the part of the link that failed
    (C(link), C(carrier), C(mtu), C(address)) or the check (C(cable), C(gid), C(speed)) with the C(object) (kind
    C(link), the netdev).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_strays, lldp
from ansible_collections.dgxspark.ds41f.plugins.module_utils import links as live
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform, rdma
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host
from ansible_collections.dgxspark.ds41f.plugins.module_utils.run_all import run_all


def neighbours(module):
    """(running, {netdev: neighbour}) from lldpctl; not running when lldpd is absent or stopped."""
    if module.get_bin_path("lldpctl") is None:
        return False, {}
    rc, out, _ = module.run_command(["lldpctl", "-f", "keyvalue"])
    if rc != 0:
        return False, {}
    return True, lldp.parse(out)


MODULE_SPEC = dict(
    argument_spec={
        "links": {"type": "list", "elements": "dict", "required": True},
        "mtu": {"type": "int", "required": True},
        "gid_index": {"type": "raw", "required": True},
        "speed_mbps": {"type": "int", "required": True},
        "node": {"type": "str", "required": True},
        "count": {"type": "int", "default": 3},
        "timeout": {"type": "int", "default": 2},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    link_keys = {"netdev": str, "hca": str, "port": int, "pcie": int, "peers": list}
    checks.fail_on(module, checks.elements(p["links"], "links", link_keys),
                   checks.int_range(p["mtu"], "mtu", 1280, 9216), checks.gid_index(p["gid_index"]),
                   checks.int_range(p["count"], "count", 1, 100), checks.int_range(p["timeout"], "timeout", 1, 60),
                   checks.int_range(p["speed_mbps"], "speed_mbps", 1),
                   checks.binary("ping", p["node"], module.get_bin_path)
                   if any(link.get("peers") for link in p["links"]) else None)
    node, mtu, links = p["node"], p["mtu"], sorted(p["links"], key=lambda item: (item["port"], item["pcie"]))
    policy = p["gid_index"] if p["gid_index"] == "auto" else int(p["gid_index"])
    try:
        state = live.read(module.run_command)
    except RuntimeError as exc:
        module.fail_json(msg=str(exc))
    running, heard = neighbours(module)

    rows = []
    local, cable = {}, {}
    for link in links:
        row = fc.link_row(node, link, state.get(link["netdev"]), mtu)
        rows.append(row)
        local[link["netdev"]] = row["message"] if row["status"] == "fail" else None
        if link.get("peer"):
            row = fc.cable_row(node, link, heard.get(link["netdev"]), running)
            rows.append(row)
            cable[link["netdev"]] = row["message"] if row["status"] == "fail" else None

    jobs = [(link, peer) for link in links for peer in link["peers"]]
    results = run_all([fc.ping_argv(link["netdev"], peer["address"], mtu, p["count"], p["timeout"])
                        for link, peer in jobs])
    pings = [fc.parse_ping(rc, out, err) for rc, out, err in results]
    strays = []
    if any(not ping["ok"] for ping in pings):  # what on this end may take a failing path (fabric_links removes it)
        try:
            strays = fabric_strays.judge(live.read_all(module.run_command), links)
        except RuntimeError as exc:
            module.fail_json(msg=str(exc))
    for (link, peer), ping in zip(jobs, pings, strict=True):
        stray = next((s for s in strays if fabric_strays.takes(s, link, peer["address"])), None)
        rows.append(fc.path_row(node, link, peer, ping, mtu, local[link["netdev"]], cable.get(link["netdev"]), stray))

    host = module_host(module)
    try:
        platform.require_spark(host, "GID and link speed checks")
        for link in links:
            rows.append(fc.gid_row(node, link, rdma.gid_table(host, link["hca"]), policy))
            rows.append(fc.speed_row(node, link, rdma.link_speed(host, link["netdev"]), p["speed_mbps"]))
    except Unavailable as exc:
        rows += fc.skipped_rows(node, links, "gid", str(exc))
        rows += fc.skipped_rows(node, links, "speed", str(exc))

    failing = sum(1 for r in rows if r["status"] == "fail")
    cidrs = {link["netdev"]: link.get("cidr") for link in links}
    module.exit_json(changed=False, rows=rows, failing=failing, drift=fc.drift(rows, cidrs), lldp=running)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
