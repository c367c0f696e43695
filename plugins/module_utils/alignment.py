# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Cross-node alignment: every node of one cluster must read the same kernel, page size, driver, ..."""

from __future__ import annotations

FIXES = {
    "kernel": "boot every node into the same kernel (the kernel stage pins it).",
    "page_size": "boot every node into the same kernel flavour (64 KiB or 4 KiB).",
    "driver": "install the same NVIDIA driver on every node.",
    "uvm_srcversion": "build and load the same memory-saver release everywhere (memory_saver stage), "
                      "or remove it everywhere.",
    "secure_boot": "set Secure Boot the same way on every node's firmware.",
    "governor": "run the host_baseline stage on every node.",
    "image_id": "run the image stage: it ships one image to every node.",
    "dgx_spark": "do not mix DGX Sparks with other machines in one cluster.",
    "cx7_firmware": "update the ConnectX-7 firmware of the nodes behind to the others' (DGX OS ships it through "
                    "fwupd: fwupdmgr refresh && fwupdmgr update on each, then a cold power cycle).",
    "rdma_core": "install the others' rdma-core on the nodes that differ (apt-get install rdma-core=<version> "
                 "ibverbs-providers=<version> on each).",
}


def mismatches(readings, keys):
    """``readings``: {node: {key: value}}. Returns one dict per key whose values differ across nodes."""
    out = []
    for key in keys:
        values = {node: r.get(key) for node, r in sorted(readings.items())}
        if len({repr(v) for v in values.values()}) > 1:
            groups = {}
            for node, value in values.items():
                groups.setdefault(repr(value), []).append(node)
            ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
            found = "; ".join("%s on %s" % (k, ", ".join(v)) for k, v in ordered)
            out.append({"setting": key, "found": found, "values": values,
                        "fix": FIXES.get(key, "make %s the same on every node." % key)})
    return out
