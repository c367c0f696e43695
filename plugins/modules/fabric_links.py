# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_links
short_description: Make the live state of the ConnectX-7 netdevs match the site (MTU, link up, addresses, routes)
version_added: 0.1.0
description:
  - Reads each CX7 netdev of the node's site links with C(ip -j addr) and fixes what differs from the
    site - the MTU (a firmware update resets it to 1500), the link's administrative state, the path's
    address, its ARP settings (C(arp_ignore=1), C(arp_announce=2), per netdev), and the ring-transit routes
    when given.
  - Reads the whole kind on the fabric too - every address, route (every table), neighbour and proxy entry and
    policy rule, IPv4 and IPv6 (C(ip -j addr), C(ip -j route show table all), C(ip -j neigh), C(ip -j rule)) - and
    removes each one the site does not derive - on a CX7 netdev of the site, or elsewhere taking a path's
    addresses (a route or rule inside a path's subnet, a path's address on another netdev). Each is one drift row
    that names it as its object (kind C(address), C(route), C(neighbour) or C(rule), its name in C(ip)'s words),
    with the path it concerns. Left alone - the kernel's own routes (they follow an address), the kernel's IPv6
    link-local address, the neighbour entries ARP learns, and routes or rules broader than a path's subnet.
  - Each fix is the smallest one - C(ip link set dev X mtu N), C(ip link set dev X up), C(ip address
    replace), C(ip route replace), C(ip rule|route|neigh|address del) - so nothing else on the link flaps and RDMA
    keeps its GID slots.
  - The persistent configuration is M(dgxspark.ds41f.netplan_cx7)'s job; this module makes the running
    node agree with it without waiting for a reboot.
options:
  links:
    description: This node's C(spark_links).
    type: list
    elements: dict
    required: true
  mtu:
    description: The fabric MTU.
    type: int
    required: true
  routes:
    description: Routes ({netdev, to, via}) that must be live (ring transit).
    type: list
    elements: dict
    default: []
  node:
    description: The node's name in the site file, used in drift entries.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reads the live state and reports each fix it would make.
  diff_mode:
    support: full
    description: Per netdev setting, the live value before and the site's value after.
  idempotent:
    support: full
    description: A node that matches the site is left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: CX7 netdevs live
  dgxspark.ds41f.fabric_links:
    links: "{{ spark_links }}"
    mtu: "{{ spark_mtu }}"
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
state:
  description: The live state of each CX7 netdev after the run (as read before it in check mode).
  returned: always
  type: dict
  sample: {enp1s0f0np0: {up: true, carrier: true, mtu: 9000, addresses: [10.12.1.1/24]}}
actions:
  description: What was done (or would be, in check mode).
  returned: always
  type: list
  elements: str
drift:
  description: One entry per difference (setting, expected, found, the C(action) that mends it), setting as
    C(<node> <netdev> <what>) with its C(object) (kind C(link), the netdev), its C(aspect) (C(mtu), C(link),
    C(address), C(arp_ignore), C(arp_announce)) and the C(path) (CIDR); or for a stray C(<node> <kind> <name>) with
    its C(object) (kind, name) and the C(path) it concerns. The doctor's fix is the stage's run, C(ds41f run fabric).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_strays
from ansible_collections.dgxspark.ds41f.plugins.module_utils import links as live
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.netplan import ARP_SETTINGS


def read_conf(netdev, key):
    try:
        with open("/proc/sys/net/ipv4/conf/%s/%s" % (netdev, key)) as handle:
            return handle.read().strip()
    except OSError:
        return None


MODULE_SPEC = dict(
    argument_spec={
        "links": {"type": "list", "elements": "dict", "required": True},
        "mtu": {"type": "int", "required": True},
        "routes": {"type": "list", "elements": "dict", "default": []},
        "node": {"type": "str", "required": True},
    },
    supports_check_mode=True,
)


def run(module):
    checks.fail_on(module, checks.elements(module.params["links"], "links",
                                           {"netdev": str, "address": str, "prefix": int}),
                   checks.elements(module.params["routes"], "routes", {"to": str, "via": str, "netdev": str}),
                   checks.int_range(module.params["mtu"], "mtu", 1280, 9216),
                   checks.binary("ip", module.params["node"], module.get_bin_path))
    node, mtu = module.params["node"], module.params["mtu"]
    plan = Plan(module)

    def ip(*argv):
        def go():
            rc, out, err = module.run_command(["ip", *argv])
            if rc != 0:
                module.fail_json(msg="ip %s failed: %s" % (" ".join(argv), (err or out).strip()), actions=plan.actions)
        return go

    def remove(stray):
        """Remove a stray; one gone by itself meanwhile (networkd dropping a route it no longer has) is no failure."""
        def go():
            rc, out, err = module.run_command(stray["remove"])
            if rc != 0 and present(stray):
                module.fail_json(msg="%s failed: %s" % (" ".join(stray["remove"]), (err or out).strip()),
                                 actions=plan.actions)
        return go

    def present(stray):
        try:
            now = fabric_strays.judge(live.read_all(module.run_command), links, module.params["routes"])
        except RuntimeError:
            return True
        return any((s["kind"], s["name"]) == (stray["kind"], stray["name"]) for s in now)

    def sysctl(setting, value):
        def go():
            rc, out, err = module.run_command(["sysctl", "-w", "%s=%s" % (setting, value)])
            if rc != 0:
                module.fail_json(msg="sysctl %s failed: %s" % (setting, (err or out).strip()), actions=plan.actions)
        return go

    try:
        reading = live.read_all(module.run_command)
    except RuntimeError as exc:
        module.fail_json(msg=str(exc))
    state, routes = live.addr_state(reading["addr"]), live.gateway_routes(reading["route4"])

    links = sorted(module.params["links"], key=lambda item: item["netdev"])
    for link in links:
        if link["netdev"] not in state:
            module.fail_json(msg="%s has no netdev %s; run the fabric stage from its playbook (its preflight "
                             "names the fix)." % (node, link["netdev"]))
    # What the site does not derive goes first, rules first and addresses last (a route may use an address), so that
    # the path's own address, added below, is never a secondary that goes with a stray primary of its subnet.
    for stray in fabric_strays.judge(reading, links, module.params["routes"]):
        plan.change("%s %s %s" % (node, stray["kind"], stray["name"]), None, stray["found"],
                    "%s (not in the site)" % " ".join(stray["remove"]), remove(stray),
                    about=(stray["kind"], stray["name"]), path=stray["path"])
    for link in links:
        netdev = link["netdev"]
        have = state[netdev]
        plan.manages("link", netdev, mtu=mtu, address="%s/%d" % (link["address"], link["prefix"]),
                     peers=[peer["address"] for peer in link.get("peers") or []])
        # Each row names the link and the part of it that differs as data: the doctor folds a path by them.
        about = {"about": ("link", netdev), "path": link.get("cidr")}
        if have["mtu"] != mtu:
            plan.change("%s %s mtu" % (node, netdev), mtu, have["mtu"], "ip link set dev %s mtu %d" % (netdev, mtu),
                        ip("link", "set", "dev", netdev, "mtu", str(mtu)), aspect="mtu", **about)
        if not have["up"]:
            plan.change("%s %s link" % (node, netdev), "up", "down", "ip link set dev %s up" % netdev,
                        ip("link", "set", "dev", netdev, "up"), aspect="link", **about)
        want = "%s/%d" % (link["address"], link["prefix"])
        if want not in have["addresses"]:
            plan.change("%s %s address" % (node, netdev), want, None,
                        "ip address replace %s dev %s" % (want, netdev), ip("address", "replace", want, "dev", netdev),
                        aspect="address", **about)
        for key, value in ARP_SETTINGS:
            found = read_conf(netdev, key)
            if found != value:
                setting = "net.ipv4.conf.%s.%s" % (netdev, key)
                plan.change("%s %s %s" % (node, netdev, key), value, found, "sysctl -w %s=%s" % (setting, value),
                            sysctl(setting, value), aspect=key, **about)
    for route in sorted(module.params["routes"], key=lambda r: r["to"]):
        found = routes.get(route["to"])
        want = {"via": route["via"], "dev": route["netdev"]}
        if found != want:
            plan.change("%s route %s" % (node, route["to"]), "via %s dev %s" % (route["via"], route["netdev"]),
                        "via %s dev %s" % (found["via"], found["dev"]) if found else None,
                        "ip route replace %s via %s dev %s" % (route["to"], route["via"], route["netdev"]),
                        ip("route", "replace", route["to"], "via", route["via"], "dev", route["netdev"]))
    if plan.actions and not module.check_mode:
        state = live.read(module.run_command)
    ours = {link["netdev"]: state.get(link["netdev"]) for link in module.params["links"]}
    module.exit_json(**plan.result(state=ours))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
