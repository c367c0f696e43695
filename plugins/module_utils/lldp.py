# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""LLDP: what is really on the other end of each ConnectX-7 port, against the site file.

``parse`` reads ``lldpctl -f keyvalue`` (``lldp.<local netdev>.chassis.name=dgx2``, ``...port.ifname=`` or,
when the far end advertises its port by MAC, ``...port.descr=``). ``observed`` turns every node's
neighbours into cables between node ports; ``differences`` compares them with the site's cabling;
``suggest_site`` writes the cabling found as per-node ``cables`` overrides for a sysadmin to review.
Discovery never changes addresses by itself.
"""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.fabric_check import port_of

_AGE_RE = re.compile(r"(\d+) days?, (\d+):(\d+):(\d+)")


def _seconds(age):
    """'0 day, 00:02:23' -> 143."""
    match = _AGE_RE.match(age or "")
    if not match:
        return None
    days, hours, minutes, seconds = (int(g) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def parse(text):
    """{local netdev: {name, port, mac, mgmt_ip, age}} from ``lldpctl -f keyvalue``.

    A port can list more than one neighbour: after a cable moves, lldpd keeps the old one until its TTL
    runs out. The most recently seen one (smallest age) is the one on the cable now.
    """
    blocks = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        parts = key.split(".")
        if not sep or parts[0] != "lldp" or len(parts) < 3:
            continue
        field = ".".join(parts[2:])
        entries = blocks.setdefault(parts[1], [])
        if field == "via" or not entries:
            entries.append({})
        entries[-1].setdefault(field, value)  # the first value wins (mgmt-ip repeats: IPv4 comes first)
    out = {}
    for netdev, entries in blocks.items():
        found = [{
            "name": e.get("chassis.name"),
            "port": e.get("port.ifname") or e.get("port.descr"),
            "mac": e.get("chassis.mac"),
            "mgmt_ip": e.get("chassis.mgmt-ip"),
            "age": _seconds(e.get("age")),
        } for e in entries]
        found.sort(key=lambda n: n["age"] if n["age"] is not None else float("inf"))
        out[netdev] = dict(found[0], others=len(found) - 1)
    return out


def observed(neighbours, nodes):
    """Cables seen by LLDP: {(node, port): (peer node, peer port) or None (unknown far end)}.

    ``neighbours``: {node: parse() output}. A port counts once per node; its PCIe paths must agree,
    otherwise the port maps to None (a path sees something else: check the cable).
    """
    seen = {}
    for node in nodes:
        for netdev, far in sorted((neighbours.get(node) or {}).items()):
            mine = port_of(netdev)
            if mine is None:
                continue
            theirs = port_of(far.get("port") or "")
            end = (far["name"], theirs[0]) if far.get("name") in nodes and theirs else None
            key = (node, mine[0])
            if key in seen and seen[key] != end:
                seen[key] = None
            else:
                seen.setdefault(key, end)
    return seen


def expected(cables):
    """The site's cabling from ``spark_cables`` rows: {(node, port): (peer, port)} both ways."""
    out = {}
    for row in cables:
        if row["b"] == "switch":
            continue
        out[(row["a"], row["a_port"])] = (row["b"], row["b_port"])
        out[(row["b"], row["b_port"])] = (row["a"], row["a_port"])
    return out


def _end(end):
    return "%s:%d" % end if end else "nothing known"


def differences(cables, seen):
    """Lines naming each port whose LLDP neighbour differs from the site file."""
    want = expected(cables)
    lines = []
    for key in sorted(set(want) | set(seen)):
        if key not in seen:
            lines.append("%s port %d: no LLDP neighbour seen (site: %s)" % (key[0], key[1], _end(want.get(key))))
        elif seen[key] != want.get(key):
            lines.append("%s port %d is cabled to %s; the site says %s" % (
                key[0], key[1], _end(seen[key]), _end(want.get(key))))
    return lines


def swaps(cables, seen):
    """Pairs of ports whose far ends are exchanged: two plugs swapped. Swapping the plugs at ports a, b
    gives the same wiring as swapping them at the far ends, so each swap is one line naming both."""
    want = expected(cables)
    keys = sorted(k for k in want if seen.get(k) and seen[k] != want[k])
    pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:] if seen[a] == want[b] and seen[b] == want[a]]
    lines, done = [], set()
    # Name first the pair whose two ports are on one node: that is where the plugs most likely moved.
    for a, b in sorted(pairs, key=lambda pair: pair[0][0] != pair[1][0]):
        mirror = frozenset((want[a], want[b]))
        if frozenset((a, b)) in done or mirror in done:
            continue
        done.update((frozenset((a, b)), mirror))
        lines.append("cables swapped at %s and %s (or, the same wiring, at %s and %s): %s reaches %s, %s reaches %s"
                     % (_end(a), _end(b), _end(want[b]), _end(want[a]), _end(a), _end(seen[a]), _end(b),
                        _end(seen[b])))
    return lines


def suggest_site(site, seen):
    """The site with per-node ``cables`` overrides written from what LLDP saw (ports seen only)."""
    out = dict(site)
    nodes = []
    for node in site.get("nodes", []):
        node = dict(node)
        found = {port: "%s:%d" % end for (name, port), end in sorted(seen.items()) if name == node["name"] and end}
        if found:
            node["cables"] = found
        else:
            node.pop("cables", None)
        nodes.append(node)
    out["nodes"] = nodes
    return out
