# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The UEFI boot order: `efibootmgr -v` (BootCurrent, BootOrder and every Boot#### entry), which entry is a network
(PXE or HTTP) boot, and the order that puts the installed OS ahead of every network entry.

A DGX Spark whose firmware update put its PXE entry first waits about a minute for a DHCP offer on every boot
before it falls through to the disk (the seeds' setup guide). efibootmgr separates an entry's label from its device
path with a tab (efibootmgr 17 and 18 alike); a label may hold spaces, colons and parentheses."""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable

COMMAND = ["efibootmgr", "-v"]
_ENTRY = re.compile(r"^Boot([0-9A-Fa-f]{4})(\*?)\s+(.*)$")
# A network boot: the device path reaches a MAC, IPv4/IPv6 or URI node, or the firmware's own label says so.
_NET_PATH = re.compile(r"/(?:MAC|IPv4|IPv6|Uri)\(")
_NET_LABEL = re.compile(r"\b(?:PXE|HTTP|Network)\b", re.I)
_DISK_PATH = re.compile(r"\bHD\(.*File\(", re.I)


def parse(text):
    """{current, order, entries}: BootCurrent, BootOrder (upper-case hex, in order) and {number: {label, path,
    active}} from `efibootmgr -v`; efibootmgr 18's indented `dp:`/`data:` lines are skipped."""
    current, order, entries = None, [], {}
    for line in (text or "").splitlines():
        if line.startswith("BootCurrent:"):
            current = line.split(":", 1)[1].strip().upper() or None
        elif line.startswith("BootOrder:"):
            order = [n.strip().upper() for n in line.split(":", 1)[1].split(",") if n.strip()]
        else:
            match = _ENTRY.match(line)
            if match:
                number, star, rest = match.groups()
                label, _, path = rest.partition("\t")
                entries[number.upper()] = {"label": label.strip(), "path": path.strip(), "active": star == "*"}
    return {"current": current, "order": order, "entries": entries}


def is_network(entry):
    return bool(_NET_PATH.search(entry["path"]) or _NET_LABEL.search(entry["label"]))


def os_entry(boot):
    """The entry of the installed OS: the one this boot came from when it is a disk entry, else the first disk
    entry in the boot order (an HD(...)/File(...) path); None when there is none."""
    entries = boot["entries"]
    current = entries.get(boot["current"] or "")
    if current and not is_network(current) and _DISK_PATH.search(current["path"]):
        return boot["current"]
    for number in boot["order"]:
        entry = entries.get(number)
        if entry and not is_network(entry) and _DISK_PATH.search(entry["path"]):
            return number
    return None


def wanted_order(boot):
    """The boot order with the OS entry ahead of every network entry (the others keep their places), or the order
    as it is when nothing needs to move (no network entry before the OS, or no OS entry to move)."""
    order, first = boot["order"], os_entry(boot)
    if first is None or first not in order:
        return list(order)
    ahead = order[:order.index(first)]
    if not any(is_network(boot["entries"].get(n, {"label": "", "path": ""})) for n in ahead):
        return list(order)
    return [first] + [n for n in order if n != first]


def describe(boot, numbers):
    """The boot order as a person reads it: '0002 (UEFI: PXE IPv4 ...), 0004 (ubuntu)'."""
    return ", ".join("%s (%s)" % (n, boot["entries"].get(n, {}).get("label") or "no such entry") for n in numbers)


def read(host):
    """The node's boot entries; Unavailable when they cannot be read (no efibootmgr, no EFI variables)."""
    rc, out, err = host.run(COMMAND)
    if rc == 127:
        raise Unavailable("efibootmgr is not installed")
    if rc != 0:
        said = (err or out).strip().splitlines()
        raise Unavailable("efibootmgr exited %d: %s" % (rc, said[0] if said else "no output"))
    return parse(out)
