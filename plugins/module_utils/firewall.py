# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The host firewall: one nftables table of the collection's own (``inet ds41f``) from the site, and its checks.

The table hooks input only, at a priority before Docker's and Tailscale's chains, with a drop policy. What it
accepts, and nothing else:

- packets of connections already accepted, and loopback;
- anything from the cluster's own nodes (their management and fabric addresses, from the one topology model):
  the rendezvous port, the engine's internal sockets (vLLM opens them on ports it picks), the fan-out shares,
  the collective check, the ping matrix;
- SSH from the management network (``ssh.sources``) and on the named interfaces (a tailnet's);
- on the head, the API port from ``serve_clients`` (and the scrape addresses of ``/metrics``);
- ICMP of the kinds a network needs (echo, unreachable with path MTU, time exceeded, IPv6 neighbour discovery);
- a site's own openings (``firewall_allow``), each a port and its sources.

A drop in any base chain is final in nftables, so Docker's and Tailscale's own accepts cannot reopen what this
table drops, and this table never touches theirs. RDMA traffic bypasses netfilter; the fabric's cabling keeps it
isolated (docs/security.md).

Pure Python: the controller's validation and the node's module share it.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.dgxspark.ds41f.plugins.module_utils import proxy

FAMILY, NAME = "inet", "ds41f"
TABLE = "%s %s" % (FAMILY, NAME)
# Before the filter chains of Docker (iptables-nft, priority filter) and Tailscale: our drop comes first.
PRIORITY = "filter - 10"
# ICMP a host needs whoever sends it: echo (ping), unreachable (path MTU discovery), time exceeded, and IPv6's
# neighbour discovery, without which IPv6 does not work at all.
ICMP4 = ("echo-request", "destination-unreachable", "time-exceeded", "parameter-problem")
ICMP6 = ("echo-request", "destination-unreachable", "packet-too-big", "time-exceeded", "parameter-problem",
         "nd-neighbor-solicit", "nd-neighbor-advert", "nd-router-advert")
PROTOCOLS = ("tcp", "udp")


class FirewallError(ValueError):
    """A value the ruleset cannot hold; str() names the field and the fix."""


def network(value, field):
    """An address or network as nftables writes it (a host address without /32), refusing anything else."""
    try:
        net = ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise FirewallError("%s: %r is not an IP address or network. Fix: write an address (192.168.1.5) or a "
                            "network (192.168.1.0/24)." % (field, value)) from None
    if net.prefixlen == 0:
        raise FirewallError("%s: %r is every address. Fix: name the networks that may connect; a firewall that "
                            "accepts the world is no firewall." % (field, value))
    single = net.prefixlen == net.max_prefixlen
    return str(net.network_address) if single else str(net)


def node_addresses(nodes, cables):
    """Every address of the cluster's nodes: each node's management address and both ends of every cable."""
    found = {str(n["address"]) for n in nodes or [] if n.get("address")}
    for cable in cables or []:
        found.update(str(a) for a in (cable.get("addresses") or {}).values())
    return sorted(found, key=ipaddress.ip_address)


def _by_family(values, field):
    out = {4: [], 6: []}
    for i, value in enumerate(values or []):
        text = network(value, "%s[%d]" % (field, i))
        out[ipaddress.ip_network(text, strict=False).version].append(text)
    return {v: sorted(set(a), key=lambda t: ipaddress.ip_network(t, strict=False)) for v, a in out.items()}


def _port(value, field):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise FirewallError("%s: %r is not a port from 1 to 65535. Fix: write the number." % (field, value))
    return value


def _iface(value, field):
    text = str(value)
    if not text or len(text) > 15 or not all(c.isalnum() or c in "._-" for c in text):
        raise FirewallError("%s: %r is not an interface name (1-15 letters, digits, '.', '_', '-'). Fix: write "
                            "the name `ip link` shows, e.g. tailscale0." % (field, value))
    return text


def _set(name, version, elements, interval):
    kind = "ipv4_addr" if version == 4 else "ipv6_addr"
    lines = ["\tset %s {" % name, "\t\ttype %s" % kind]
    if interval:
        lines.append("\t\tflags interval")
    lines.append("\t\telements = { %s }" % ", ".join(elements))
    return lines + ["\t}"]


def ruleset(nodes, ssh, api=None, allow=()):
    """The whole table as ``nft -f`` text that replaces only this table, atomically.

    ``nodes``: the cluster's addresses; ``ssh``: ``{port, sources, interfaces}``; ``api``: ``{port, sources}`` on
    the head, None elsewhere; ``allow``: the site's own ``{port, proto, sources}`` openings."""
    sets, rules = [], []
    node_sets = _by_family(nodes, "nodes")
    for version, family in ((4, "ip"), (6, "ip6")):
        if node_sets[version]:
            sets += _set("nodes_v%d" % version, version, node_sets[version], False)
            rules.append("\t\t%s saddr @nodes_v%d accept comment \"the cluster's own nodes\"" % (family, version))
    ssh_port = _port(ssh.get("port", 22), "ssh.port")

    def opening(label, proto, port, sources, field):
        by = _by_family(sources, field)
        for version, family in ((4, "ip"), (6, "ip6")):
            if by[version]:
                set_name = "%s_v%d" % (label, version)
                sets.extend(_set(set_name, version, by[version], True))
                rules.append("\t\t%s saddr @%s %s dport %d accept comment \"%s\"" % (
                    family, set_name, proto, port, label))

    opening("ssh", "tcp", ssh_port, ssh.get("sources"), "firewall_ssh_sources")
    for i, iface in enumerate(ssh.get("interfaces") or []):
        rules.append("\t\tiifname \"%s\" tcp dport %d accept comment \"ssh\"" % (
            _iface(iface, "firewall_ssh_interfaces[%d]" % i), ssh_port))
    if api:
        opening("api", "tcp", _port(api["port"], "serve_port"), api.get("sources"), "serve_clients")
    for i, item in enumerate(allow or []):
        field = "firewall_allow[%d]" % i
        proto = item.get("proto", "tcp")
        if proto not in PROTOCOLS:
            raise FirewallError("%s.proto: %r is not tcp or udp. Fix: write tcp or udp." % (field, proto))
        if not item.get("sources"):
            raise FirewallError("%s.sources: is empty. Fix: name the networks that may connect to port %s." % (
                field, item.get("port")))
        opening("allow%d" % i, proto, _port(item.get("port"), field + ".port"), item["sources"], field + ".sources")
    head = ["table %s {" % TABLE, "}", "delete table %s" % TABLE, "table %s {" % TABLE]
    chain = ["\tchain input {",
             "\t\ttype filter hook input priority %s; policy drop;" % PRIORITY,
             "\t\tct state established,related accept",
             "\t\tct state invalid drop",
             "\t\tiif \"lo\" accept"] + rules + [
             "\t\tmeta l4proto icmp icmp type { %s } accept" % ", ".join(ICMP4),
             "\t\tmeta l4proto ipv6-icmp icmpv6 type { %s } accept" % ", ".join(ICMP6),
             "\t}"]
    return "\n".join(["# Written by dgxspark.ds41f (the firewall stage): the table %s only." % TABLE] + head + sets
                     + chain + ["}", ""])


def accepts(client, nodes, ssh, interface=None):
    """Whether the rules let ``client`` open a new SSH connection (the address the controller comes from, arriving
    on ``interface``)."""
    if not client or (interface and interface in (ssh.get("interfaces") or [])):
        return True
    address = ipaddress.ip_address(client)
    if address.is_loopback or str(address) in {str(ipaddress.ip_address(n)) for n in nodes or []}:
        return True
    return any(address in ipaddress.ip_network(str(s), strict=False) for s in ssh.get("sources") or [])


def problems(values):
    """The firewall's and the API's addresses as the controller's validation judges them: (field, message, fix)
    each, from the same functions that render the rules and the proxy."""
    out = []

    def check(render):
        try:
            render()
        except (FirewallError, proxy.ProxyError) as exc:
            field, _, rest = str(exc).partition(": ")
            message, _, fix = rest.partition(" Fix: ")
            out.append((field, message, fix))
        except (TypeError, AttributeError, KeyError):
            pass  # a value of another type than its spec declares: the spec's type check names it

    ssh = {"port": 22, "sources": values.get("firewall_ssh_sources") or [],
           "interfaces": values.get("firewall_ssh_interfaces") or []}
    check(lambda: ruleset([], ssh, None, values.get("firewall_allow") or []))
    clients = list(values.get("serve_clients") or []) + list(values.get("serve_metrics_clients") or [])
    check(lambda: _by_family(values.get("serve_clients") or [], "serve_clients"))
    check(lambda: _by_family(values.get("serve_metrics_clients") or [], "serve_metrics_clients"))
    check(lambda: proxy.listeners(values.get("serve_listen") or [], 1))
    if values.get("firewall_state", "present") == "present":
        if "serve_clients" in values and not clients:
            out.append(("serve_clients", "is empty (the site file names no management_network): the firewall would "
                        "let no client reach the API.", "set management_network in the site file, or name the "
                        "networks that use the API in serve_clients."))
        if "firewall_ssh_sources" in values and not ssh["sources"] and not ssh["interfaces"]:
            out.append(("firewall_ssh_sources", "is empty (the site file names no management_network): every node "
                        "would refuse SSH from everywhere but the other nodes.", "set management_network in the "
                        "site file, or name the controller's networks in firewall_ssh_sources."))
    return out
