# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The DRM card the display carve-out allocates on: a card under /sys/class/drm whose device the nvidia driver owns
(its `device/uevent` says DRIVER=nvidia), and no process holding DRM master on it (the `master` column of
/sys/kernel/debug/dri/<minor>/clients, root and debugfs only). The serving engine imports its embedding and output
head through a dumb buffer there; a master held by a desktop or a stale process refuses it.

The clients file's header names its columns (`command`, then `pid` in older kernels or `tgid` in newer ones, and
lately `name` and `client-id` at the end), so the columns are found by name; only the command may hold spaces."""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable

DRIVER = "nvidia"
_CARD = re.compile(r"^card(\d+)$")


def parse_uevent(text):
    return dict(line.split("=", 1) for line in (text or "").splitlines() if "=" in line)


def cards(host):
    """Every DRM card (not its connectors): [{card, minor, driver, pci_id, slot}] in card order."""
    out = []
    names = [n for n in host.listdir("/sys/class/drm") if _CARD.match(n)]
    for name in sorted(names, key=lambda n: int(_CARD.match(n).group(1))):
        uevent = parse_uevent(host.read("/sys/class/drm/%s/device/uevent" % name))
        out.append({"card": name, "minor": int(_CARD.match(name).group(1)), "driver": uevent.get("DRIVER"),
                    "pci_id": uevent.get("PCI_ID"), "slot": uevent.get("PCI_SLOT_NAME")})
    return out


def nvidia_card(found):
    return next((c for c in found if c["driver"] == DRIVER), None)


def parse_clients(text):
    """[{command, pid, master}] from a debugfs clients file; master True for the row marked y."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    if "command" not in header or "master" not in header:
        raise ValueError("not a DRM clients table: %r" % lines[0])
    pid_col = "tgid" if "tgid" in header else "pid"
    out = []
    for line in lines[1:]:
        cells = line.split()
        extra = len(cells) - len(header)  # a command with spaces in it ("Web Content"): the other columns have none
        if extra > 0:
            cells = [" ".join(cells[:extra + 1])] + cells[extra + 1:]
        row = dict(zip(header, cells, strict=False))  # older kernels print no name, client-id
        out.append({"command": row.get("command"), "pid": int(row[pid_col]) if row.get(pid_col, "").isdigit()
                    else None, "master": row.get("master") == "y"})
    return out


def masters(host, card):
    """The clients holding DRM master on ``card``; Unavailable when debugfs cannot be read (not root, not
    mounted)."""
    path = "/sys/kernel/debug/dri/%d/clients" % card["minor"]
    text = host.read(path)
    if text is None:
        raise Unavailable("%s is not readable (debugfs is root's, mounted at /sys/kernel/debug)" % path)
    return [c for c in parse_clients(text) if c["master"]]
