# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""What lives on the fabric that the site does not derive: every address, route, neighbour entry and policy rule on
a node's CX7 netdevs, and any route, rule or address elsewhere that takes a fabric path's addresses.

The site derives, per link of ``spark_links``, its address on its netdev (with the routes and local entries the
kernel makes from an address), and on a ring with transit the routes it is given. Everything else is a stray: an
object ``{kind, name}`` (kind ``address``, ``route``, ``neighbour`` or ``rule``; the name in ``ip``'s own words) with
what was found, the ``ip`` command that removes it, and the fabric path it concerns (the one whose subnet holds its
addresses, else the one of its netdev). Left alone: the kernel's routes (they follow an address, which is judged),
the kernel's IPv6 link-local address (NetworkManager's ``ipv6.method=ignore`` leaves it to the kernel), the
neighbour entries ARP learns, and routes or rules elsewhere that are broader than a path's subnet (a default route
does not take a path: the path's own /24 is more specific).

Pure functions over ``ip -j`` output (``links.read_all``), so recorded outputs test them.
"""

from __future__ import annotations

import ipaddress

KINDS = ("rule", "route", "neighbour", "address")  # the order a converge removes them in (a route before its address)


def _net(text, length=None, family="-4"):
    """An ip network from ip's words ('10.12.1.3', '10.12.1.0/24', 'default'); None for 'all' or nothing."""
    if text in (None, "all"):
        return None
    if text == "default":
        text = "0.0.0.0/0" if family == "-4" else "::/0"
    return ipaddress.ip_network(text if length is None else "%s/%s" % (text, length), strict=False)


class Site:
    """A node's links as the judge needs them: the netdevs it owns, the paths' subnets, the transit routes."""

    def __init__(self, links, transit=()):
        self.owned = {link["netdev"]: link for link in links}
        self.paths = [ipaddress.ip_network("%s/%d" % (link["address"], link["prefix"]), strict=False)
                      for link in links]
        self.transit = {ipaddress.ip_network(route["to"], strict=False) for route in transit}

    def path_of(self, net):
        """The CIDR of the path whose subnet holds ``net`` (an address or a network), else None."""
        for subnet in self.paths:
            if net is not None and net.version == subnet.version and net.subnet_of(subnet):
                return str(subnet)
        return None

    def want(self, netdev):
        link = self.owned[netdev]
        return "%s/%d" % (link["address"], link["prefix"])

    def stray(self, kind, name, netdev, found, remove, **selects):
        """One stray. ``selects``: the addresses it takes, as networks (``dst``: traffic to them, ``src``: traffic
        from them, ``local``: held or answered for here, ``neighbour``: an entry's address), for ``takes``; its path
        is the one whose subnet holds them, else the one of its netdev."""
        path = next((self.path_of(net) for net in selects.values() if self.path_of(net)), None)
        if path is None and netdev in self.owned:
            path = self.path_of(_net(self.owned[netdev]["address"]))
        return {"kind": kind, "name": name, "netdev": netdev, "found": found, "remove": remove, "path": path,
                "selects": {key: str(net) for key, net in selects.items() if net is not None}}


def addresses(site, items):
    """Addresses (``ip -j addr``): on an owned netdev, all but the path's own (and the kernel's IPv6 link-local);
    elsewhere, one inside a path's subnet."""
    out = []
    for item in items:
        dev = item["ifname"]
        for info in item.get("addr_info") or []:
            if info.get("family") not in ("inet", "inet6"):
                continue
            cidr = "%s/%d" % (info["local"], info["prefixlen"])
            local = _net(info["local"])
            if dev in site.owned:
                if cidr == site.want(dev) or (local.version == 6 and local.network_address.is_link_local):
                    continue
            elif site.path_of(local) is None:
                continue
            out.append(site.stray("address", "%s dev %s" % (cidr, dev), dev, cidr,
                                  ["ip", "address", "del", cidr, "dev", dev], local=local))
    return out


def route_words(route):
    """A route as ``ip route`` names it (type, destination, gateway, device, table, metric): its name, and what
    ``ip route del`` takes to remove that one route."""
    words = [route["type"]] if route.get("type", "unicast") != "unicast" else []
    words.append(route["dst"])
    if route.get("gateway"):
        words += ["via", route["gateway"]]
    if route.get("dev"):
        words += ["dev", route["dev"]]
    if route.get("table", "main") != "main":
        words += ["table", str(route["table"])]
    if "metric" in route:
        words += ["metric", str(route["metric"])]
    return words


def routes(site, items, family="-4"):
    """Routes of every table (``ip -j -4|-6 route show table all``) over an owned netdev, or inside a path's subnet,
    that the site does not derive. A main-table route to a transit destination is the transit check's to judge."""
    out = []
    for route in items:
        if route.get("protocol") == "kernel":
            continue
        devs = sorted(d for d in {route.get("dev")} | {hop.get("dev") for hop in route.get("nexthops") or []}
                      if d in site.owned)
        dst = _net(route["dst"], family=family)
        if not devs and site.path_of(dst) is None:
            continue
        if route.get("table", "main") == "main" and route.get("type", "unicast") == "unicast" and dst in site.transit:
            continue
        words = route_words(route)
        found = "present" + (", proto %s" % route["protocol"] if route.get("protocol") else "")
        out.append(site.stray("route", " ".join(words), devs[0] if devs else None, found,
                              ["ip", family, "route", "del"] + words, dst=dst))
    return out


def neighbours(site, items, proxies):
    """Permanent neighbour entries (``ip -j neigh``) and proxy entries (``ip -j neigh show proxy``) on an owned
    netdev: the site adds none, and ARP learns every peer's MAC."""
    out = []
    for entry in items:
        dev = entry.get("dev")
        if dev in site.owned and "PERMANENT" in (entry.get("state") or []):
            out.append(site.stray("neighbour", "%s dev %s" % (entry["dst"], dev), dev,
                                  "lladdr %s, permanent" % (entry.get("lladdr") or "none"),
                                  ["ip", "neigh", "del", entry["dst"], "dev", dev], neighbour=_net(entry["dst"])))
    for entry in proxies:
        dev = entry.get("dev")
        if dev in site.owned:
            out.append(site.stray("neighbour", "proxy %s dev %s" % (entry["dst"], dev), dev, "proxy entry",
                                  ["ip", "neigh", "del", "proxy", entry["dst"], "dev", dev], local=_net(entry["dst"])))
    return out


def _rule_net(rule, side):
    return _net(rule.get(side), rule.get(side + "len"))


def rule_words(rule):
    """A policy rule as ``ip rule`` names it: its priority, selectors and action."""
    words = ["pref", str(rule["priority"])]
    if "not" in rule:
        words.append("not")
    for side, word in (("src", "from"), ("dst", "to")):
        if _rule_net(rule, side) is not None:
            words += [word, str(_rule_net(rule, side))]
    for key in ("iif", "oif", "fwmark", "tos", "ipproto"):
        if rule.get(key) is not None:
            words += [key, str(rule[key])]
    if rule.get("table"):
        words += ["lookup", str(rule["table"])]
    elif rule.get("action"):
        words.append(rule["action"])
    return words


def rules(site, items, family="-4"):
    """Policy rules (``ip -j -4|-6 rule``) that name an owned netdev or select a path's addresses."""
    out = []
    for rule in items:
        devs = [rule[key] for key in ("iif", "oif") if rule.get(key) in site.owned]
        dst, src = _rule_net(rule, "dst"), _rule_net(rule, "src")
        if devs or site.path_of(dst) or site.path_of(src):
            words = rule_words(rule)
            out.append(site.stray("rule", " ".join(words), devs[0] if devs else None, "present",
                                  ["ip", family, "rule", "del"] + words, dst=dst, src=src))
    return out


def judge(reading, links, transit=()):
    """Every stray on the node (``reading``: ``links.read_all``), in the order a converge removes them (``KINDS``)."""
    site = Site(links, transit)
    found = (rules(site, reading["rule4"], "-4") + rules(site, reading["rule6"], "-6")
             + routes(site, reading["route4"], "-4") + routes(site, reading["route6"], "-6")
             + neighbours(site, reading["neigh"], reading["proxy"]) + addresses(site, reading["addr"]))
    return sorted(found, key=lambda stray: KINDS.index(stray["kind"]))


def takes(stray, link, peer):
    """Whether ``stray`` takes this path's traffic to ``peer`` (an address): the peer's address held here (or
    answered for by proxy), a neighbour entry for the peer on the path's netdev, a route to the peer at least as
    specific as the path's subnet, a rule that selects the peer or the path's own address."""
    selects = {key: ipaddress.ip_network(net) for key, net in stray["selects"].items()}

    def holds(key, address):
        address = ipaddress.ip_address(address)
        return key in selects and selects[key].version == address.version and address in selects[key]

    if stray["kind"] == "neighbour" and "neighbour" in selects:
        return stray["netdev"] == link["netdev"] and holds("neighbour", peer)
    if stray["kind"] == "route":
        return holds("dst", peer) and selects["dst"].prefixlen >= link["prefix"]
    return holds("local", peer) or holds("dst", peer) or holds("src", link["address"])
