# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Paths on a node, by where they may point.

Every node path the collection writes is absolute and normal (no ``.``, ``..``, ``//`` or trailing slash) and
built from characters that no destination reads as syntax: a space splits a systemd ``ExecStart=`` line and an
exports line, ``:`` and ``,`` split ``docker run -v`` and ``--mount``, ``%`` is a systemd specifier and ``$`` an
expansion. A file the collection manages lies under a root the collection owns (``/etc/ds41f``, ...), so a site
value cannot point it at a system file; the model folder and the container's mount point are never ``/`` or a
system tree; a swap file is named as one and lies outside the system trees; the fabric's netplan file is never one
the OS installer or cloud-init writes.
"""

from __future__ import annotations

import posixpath
import re

CHARS = "A-Za-z0-9._+@~-"
CHARS_TEXT = "letters, digits and . _ + @ ~ - between slashes"
# Trees of the OS itself: nothing of the collection's data lives in them, on the node or in a container.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run",
                "/sbin", "/sys", "/usr", "/var/lib/apt", "/var/lib/dpkg", "/var/lib/docker", "/var/lib/containerd",
                "/var/lib/systemd", "/var/log", "/var/spool", "/var/mail", "/var/run")
# Shared parents on a node: a folder of the collection's data lies below them, never is one of them.
SHARED_PARENTS = ("/", "/home", "/mnt", "/media", "/opt", "/srv", "/tmp", "/var", "/var/lib", "/var/cache",
                  "/var/tmp", "/data", "/raid")
# The netplan files the OS writes (installer, cloud-init, NetworkManager's renderer file): the management network.
OS_NETPLAN = ("00-installer-config.yaml", "00-installer-config-wifi.yaml", "01-netcfg.yaml",
              "01-network-manager-all.yaml", "50-cloud-init.yaml")


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def syntax_problem(path, extra=""):
    """(reason, fix) when ``path`` is not an absolute, normal path of safe characters (and ``extra`` ones, where its
    destination reads them as they are), else None."""
    if not isinstance(path, str) or not path.startswith("/"):
        return ("is not an absolute path: on a node a relative path depends on the working folder of whatever "
                "reads it.", "write the full path, starting with /.")
    if path != "/" and (posixpath.normpath(path) != path or path.startswith("//")):
        return ("is not a normal path (it has ., .., // or a trailing slash), so two spellings could name one "
                "file and a check by prefix could be walked around.",
                "write it as %s." % posixpath.normpath(path))
    component = re.compile("[%s%s]+" % (re.escape(extra), CHARS))
    bad = [c for c in path.strip("/").split("/") if path != "/" and not component.fullmatch(c)]
    if bad:
        return ("has %r, with a character its destinations read as syntax (a space splits a unit's ExecStart= "
                "line, : and , split docker's mount options, %% and $ expand)." % bad[0],
                "use %s." % CHARS_TEXT)
    return None


def root_problem(path, roots):
    """(reason, fix) when ``path`` lies outside every root, else None."""
    if any(under(path, root) for root in roots):
        return None
    return ("lies outside %s, so the file the stage writes there could be a system file." % " and ".join(roots),
            "put it under %s." % " or ".join(roots))


def system_problem(path, what, parents=SHARED_PARENTS):
    """(reason, fix) when ``path`` is ``/``, one of ``parents`` itself or inside a system tree, else None."""
    if path in parents:
        return ("is %s itself, not a folder of its own: the stage would %s the whole of it." % (path, what),
                "give it a folder of its own below, e.g. /var/lib/ds41f/models/<repo>/<revision>.")
    tree = next((t for t in SYSTEM_TREES if under(path, t)), None)
    if tree:
        return ("lies in the system tree %s: the stage would %s the OS's own files." % (tree, what),
                "use a folder outside the system trees (/etc, /usr, /boot, /root, /run, ...), e.g. under "
                "/var/lib/ds41f.")
    return None


def swap_problem(path):
    """(reason, fix) when a swap file path does not name a swap file outside the system trees, else None."""
    name, parent = posixpath.basename(path), posixpath.dirname(path)
    if "swap" not in name.lower() or path in SHARED_PARENTS:
        return ("does not name a swap file (its name has no 'swap'): mkswap and swapon would take over whatever "
                "file it names.", "name the swap file as one, e.g. /swap-64k.img.")
    tree = next((t for t in SYSTEM_TREES if under(parent, t)), None)
    if tree:
        return ("lies in the system tree %s: mkswap would overwrite a file of the OS." % tree,
                "put the swap file at / (as /swap.img) or in a folder of its own, e.g. /var/swap/swap-64k.img.")
    return None


def netplan_problem(path):
    """(reason, fix) when a netplan file is not /etc/netplan/<name>.yaml of the stage's own, else None."""
    parent, name = posixpath.dirname(path), posixpath.basename(path)
    if parent != "/etc/netplan" or not name.endswith(".yaml"):
        return ("is not a file /etc/netplan/<name>.yaml, the only folder netplan reads.",
                "write /etc/netplan/40-cx7.yaml or another name of its own there.")
    if name in OS_NETPLAN:
        return ("is the file the OS writes for the management network: the stage would replace it with the CX7 "
                "links only, and the node would lose the network you reach it by at the next apply.",
                "give the stage a file of its own, e.g. /etc/netplan/40-cx7.yaml.")
    return None
