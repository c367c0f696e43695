# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Kernel modules: what `modinfo -k KERNEL` resolves on disk, and what is loaded (/sys/module)."""

from __future__ import annotations

# The modinfo fields the memory saver's checks compare (one `modinfo -F` call each).
FIELDS = ("filename", "version", "srcversion", "signer", "vermagic")


def on_disk(host, kernel, module):
    """{field: value or None} for the file `modprobe` would load for ``kernel``; all None when none resolves."""
    found = {}
    for field in FIELDS:
        rc, out, _ = host.run(["modinfo", "-k", kernel, "-F", field, module])
        value = out.strip() if rc == 0 else ""
        found[field] = value or None
    return found


def loaded(host, module):
    """The loaded module's source version and parameters, or loaded False."""
    base = "/sys/module/%s" % module
    if not host.exists(base):
        return {"loaded": False, "srcversion": None, "parameters": {}}
    params = {}
    for name in host.listdir(base + "/parameters"):
        value = host.read("%s/parameters/%s" % (base, name))
        if value is not None:
            params[name] = value.strip()
    srcversion = host.read(base + "/srcversion")
    return {"loaded": True, "srcversion": srcversion.strip() if srcversion else None, "parameters": params}


def owner(filename):
    """Who provides a module file: 'dkms' (updates/dkms), 'package' (kernel/...), 'other', or None."""
    if not filename:
        return None
    if "/updates/dkms/" in filename:
        return "dkms"
    if "/kernel/" in filename:
        return "package"
    return "other"
