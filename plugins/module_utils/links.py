# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The live state of a node's netdevs, from iproute2's JSON output (``ip -j addr``, ``ip -j route``)."""

from __future__ import annotations

import json


def parse_addr(text):
    """{netdev: {up, carrier, mtu, addresses}} from ``ip -j addr show``; addresses are IPv4 ``a.b.c.d/nn``."""
    out = {}
    for item in json.loads(text or "[]"):
        flags = item.get("flags") or []
        out[item["ifname"]] = {
            "up": "UP" in flags,
            "carrier": "LOWER_UP" in flags,
            "mtu": item.get("mtu"),
            "addresses": sorted("%s/%d" % (a["local"], a["prefixlen"]) for a in item.get("addr_info") or []
                                if a.get("family") == "inet"),
        }
    return out


def parse_routes(text):
    """{destination: {via, dev}} of gateway routes from ``ip -j route show``."""
    out = {}
    for item in json.loads(text or "[]"):
        if item.get("gateway"):
            out[item["dst"]] = {"via": item["gateway"], "dev": item.get("dev")}
    return out


def read(run):
    """Live netdev state through ``run(argv) -> (rc, out, err)``; raises RuntimeError when ip fails."""
    rc, out, err = run(["ip", "-j", "addr", "show"])
    if rc != 0:
        raise RuntimeError("ip -j addr show failed: %s" % (err or out).strip())
    return parse_addr(out)


def read_routes(run):
    rc, out, err = run(["ip", "-j", "route", "show"])
    if rc != 0:
        raise RuntimeError("ip -j route show failed: %s" % (err or out).strip())
    return parse_routes(out)


# networkd's SETUP column while it is still working on a link; configured, failed, unmanaged and linger are ends.
SETTING_UP = ("pending", "initialized", "configuring")


def networkd_setting_up(listing, netdevs):
    """The netdevs of ``netdevs`` that ``networkctl list --no-legend`` (IDX LINK TYPE OPERATIONAL SETUP) shows
    networkd still setting up."""
    busy = []
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1] in netdevs and parts[4] in SETTING_UP:
            busy.append(parts[1])
    return busy
