# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The fabric and the management network against the networks the nodes already run.

Every node runs Docker (its bridge ``docker0``, 172.17.0.0/16 unless the daemon's ``bip`` says otherwise, and the
daemon's ``default-address-pools`` when configured); Podman's default network is 10.88.0.0/16; Tailscale, kept
running by the host baseline when ``tailscaled.service`` is among its protected services, takes addresses from
the CGNAT range 100.64.0.0/10. A fabric /24 or a management network inside one of them makes two routes fight
for the same addresses, so the validation refuses it, naming both networks.
"""

from __future__ import annotations

try:
    import netaddr
except ImportError:  # pragma: no cover - topology.build names the missing library first
    netaddr = None

from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

DOCKER_BRIDGE = "172.17.0.0/16"
PODMAN_NETWORK = "10.88.0.0/16"
TAILSCALE_RANGE = "100.64.0.0/10"
TAILSCALE_UNIT = "tailscaled.service"


def _net(text):
    try:
        return netaddr.IPNetwork(text).cidr if isinstance(text, str) and "/" in text else None
    except (ValueError, netaddr.AddrFormatError):
        return None


def node_networks(values):
    """[(network, what it is, how to say otherwise)] the nodes run, from the recipe's host baseline."""
    bip = values.get("host_baseline_docker_bip") or ""
    docker_hint = " (if the nodes' Docker daemon uses another bip, state it in host_baseline_docker_bip)"
    out = [(_net(bip), "Docker's bridge docker0 (host_baseline_docker_bip %s)" % bip, "") if _net(bip) else
           (netaddr.IPNetwork(DOCKER_BRIDGE), "Docker's default bridge docker0", docker_hint)]
    for i, pool in enumerate(values.get("host_baseline_docker_address_pools") or []):
        if _net(pool) is not None:
            out.append((_net(pool), "Docker's address pool host_baseline_docker_address_pools[%d]" % i, ""))
    out.append((netaddr.IPNetwork(PODMAN_NETWORK), "Podman's default network podman0", ""))
    services = values.get("host_baseline_protected_services") or []
    if any(isinstance(s, dict) and s.get("name") == TAILSCALE_UNIT for s in services):
        out.append((netaddr.IPNetwork(TAILSCALE_RANGE), "Tailscale's CGNAT range (%s is in "
                    "host_baseline_protected_services)" % TAILSCALE_UNIT, ""))
    return out


def stated_problems(values):
    """The recipe's statements of the daemon's networks must parse: a wrong one would check the wrong range."""
    stated = [("host_baseline_docker_bip", values.get("host_baseline_docker_bip") or "")]
    pools = values.get("host_baseline_docker_address_pools") or []
    stated += [("host_baseline_docker_address_pools[%d]" % i, p) for i, p in enumerate(pools)
               if isinstance(pools, list)]
    return [Problem(field, "%r is not an IPv4 address/prefix." % (text,),
                    "write it as daemon.json has it, e.g. 172.26.0.1/16, or leave it empty for Docker's default.")
            for field, text in stated if text != "" and (_net(text) is None or _net(text).version != 4)]


def _overlaps(a, b):
    return a.first <= b.last and b.first <= a.last


def _fabric(cluster):
    """[(field, network)] of the fabric: the pool when the site sets one, else every path's /24."""
    if cluster.fabric_pool:
        return [("fabric_pool", netaddr.IPNetwork(cluster.fabric_pool))]
    cidrs = sorted({row["cidr"] for row in cluster.cable_table()}, key=lambda c: netaddr.IPNetwork(c))
    return [("fabric_pool", netaddr.IPNetwork(c)) for c in cidrs]  # the default fabric moves with fabric_pool


def _management(cluster, raw_nodes):
    """[(field, network)] of the management side: its network when the site states it, else each address."""
    if cluster.management_network:
        return [("management_network", netaddr.IPNetwork(cluster.management_network))]
    index = {n.get("name"): i for i, n in enumerate(raw_nodes) if isinstance(n, dict)}
    return [("nodes[%d].address" % index.get(n.name, n.rank), netaddr.IPNetwork(n.address + "/32"))
            for n in cluster.nodes]


def problems(cluster, values, raw_nodes=()):
    """One problem per collision of the fabric or the management network with a network the nodes run."""
    if netaddr is None:
        return []
    out = stated_problems(values)
    sides = (("the fabric", "move the fabric with fabric_pool: <a pool outside %s>, e.g. 10.60.0.0/16%s.",
              _fabric(cluster)),
             ("the management network", "renumber the management network outside %s%s.",
              _management(cluster, raw_nodes)))
    for network, what, hint in node_networks(values):
        for kind, fix, networks in sides:
            hit = next(((field, net) for field, net in networks if _overlaps(net, network)), None)
            if hit:
                field, net = hit
                out.append(Problem(field, "%s %s overlaps %s, %s: the nodes would route both through one "
                                   "address range." % (kind, net.cidr if net.prefixlen < 32 else net.ip, what,
                                                       network.cidr), fix % (network.cidr, hint)))
    return out
