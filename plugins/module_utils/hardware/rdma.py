# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""ConnectX-7 RDMA readings: the GID table of an HCA port, its state, a netdev's link speed, and the firmware.

The GID table lives in sysfs: ``/sys/class/infiniband/<hca>/ports/<port>/gids/<i>`` holds the GID as eight
groups of four hex digits and ``gid_attrs/types/<i>`` its type (``RoCE v2``); reading the type of an
empty slot fails, which is how the kernel says the slot is unused. An IPv4 address appears as an
IPv4-mapped IPv6 GID (``::ffff:a.b.c.d``). The link speed is ``/sys/class/net/<netdev>/speed`` in Mb/s (what
``ethtool <netdev>`` prints as ``Speed: 200000Mb/s`` on a DGX Spark port negotiated at 200G; -1 or an
unreadable file without a link), read through ethtool when sysfs does not answer.
"""

from __future__ import annotations

import ipaddress
import re

_SPEED_RE = re.compile(r"^\s*Speed:\s*(\d+)\s*Mb/s", re.M)
EMPTY_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _port(hca, port):
    return "/sys/class/infiniband/%s/ports/%d" % (hca, port)


def has_hca(host, hca):
    return host.exists("/sys/class/infiniband/%s" % hca)


def gid_table(host, hca, port=1):
    """The populated GID slots of one HCA port, in index order.

    Each entry: index, gid (compressed IPv6 text), ipv4 (the mapped IPv4 address or None), type
    (``RoCE v2``, ``IB/RoCE v1``, or None when the kernel would not say), ndev (the netdev it belongs to).
    """
    base = _port(hca, port)
    slots = [name for name in host.listdir(base + "/gids") if name.isdigit()]
    table = []
    for name in sorted(slots, key=int):
        raw = (host.read("%s/gids/%s" % (base, name)) or "").strip()
        if not raw or raw == EMPTY_GID:
            continue
        try:
            gid = ipaddress.IPv6Address(raw)
        except ValueError:
            continue
        kind = host.read("%s/gid_attrs/types/%s" % (base, name))
        ndev = host.read("%s/gid_attrs/ndevs/%s" % (base, name))
        mapped = str(gid.ipv4_mapped) if gid.ipv4_mapped else None
        table.append({
            "index": int(name),
            # An IPv4-mapped GID in RFC 5952's dotted form, as Python 3.13 and later print it: the same text whatever
            # the node's Python (3.12 prints ::ffff:c800:d106).
            "gid": "::ffff:" + mapped if mapped else gid.compressed,
            "ipv4": mapped,
            "type": kind.strip() if kind else None,
            "ndev": ndev.strip() if ndev else None,
        })
    return table


def roce_v2_index(table, ipv4):
    """The index of the RoCE v2 GID that carries ``ipv4``, or None."""
    for entry in table:
        if entry["ipv4"] == ipv4 and entry["type"] == "RoCE v2":
            return entry["index"]
    return None


def port_state(host, hca, port=1):
    """The port state word (``ACTIVE``, ``DOWN``, ...) from ``ports/<port>/state`` (``4: ACTIVE``)."""
    text = host.read(_port(hca, port) + "/state")
    if not text:
        return None
    return text.strip().split(":", 1)[-1].strip()


def link_speed(host, netdev):
    """The negotiated speed in Mb/s; None when unknown (no link) or unreadable."""
    text = (host.read("/sys/class/net/%s/speed" % netdev) or "").strip()
    if text.lstrip("-").isdigit():
        return int(text) if int(text) > 0 else None
    rc, out, _ = host.run(["ethtool", netdev])
    if rc != 0:
        return None
    match = _SPEED_RE.search(out)  # "Speed: Unknown!" (no link) has no number
    return int(match.group(1)) if match else None


def firmware(host):
    """{hca: firmware version} of every RDMA device (``/sys/class/infiniband/<hca>/fw_ver``, the value `ibv_devinfo`
    prints as fw_ver and `ethtool -i` as firmware-version, before the board id)."""
    out = {}
    for hca in host.listdir("/sys/class/infiniband"):
        value = (host.read("/sys/class/infiniband/%s/fw_ver" % hca) or "").strip()
        out[hca] = value or None
    return out
