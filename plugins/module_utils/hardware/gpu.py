# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The GB10's clocks through nvidia-smi, and the clock-latch check.

A GB10 can get stuck in a low-power state (SM clock near 700 MHz under load) that survives a reboot and
clears only when AC power is removed (field reports: eugr/spark-vllm-docker#334,
Blackwellboy/model-serving-minefield#55). Idle clocks are low by design, so the check judges the clock
only while the engine is serving.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable

FIELDS = ("index", "name", "clocks.sm", "clocks.max.sm", "utilization.gpu", "temperature.gpu")
QUERY = ["nvidia-smi", "--query-gpu=" + ",".join(FIELDS), "--format=csv,noheader,nounits"]
LATCH_FLOOR_MHZ = 1000
LATCH_FIX = ("shut the node down, unplug its power adapter from the wall for a few minutes, then power on "
             "(a reboot does not clear the latch)")


def _number(text):
    """An int from one CSV cell; None for the cells GB10 leaves unsupported ('[N/A]', 'N/A')."""
    text = text.strip()
    try:
        return int(float(text))
    except ValueError:
        return None


def parse_query(text):
    """Rows of `nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader,nounits` as dicts."""
    gpus = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(FIELDS):
            raise ValueError("nvidia-smi printed %d fields, expected %d: %r" % (len(cells), len(FIELDS), line))
        gpus.append({"index": _number(cells[0]), "name": cells[1], "sm_mhz": _number(cells[2]),
                     "max_sm_mhz": _number(cells[3]), "utilization": _number(cells[4]),
                     "temperature": _number(cells[5])})
    return gpus


def clocks(host):
    """The GPUs' clocks; raises Unavailable off a DGX Spark or without nvidia-smi."""
    platform.require_spark(host, "GPU clock check")
    rc, out, err = host.run(QUERY)
    if rc != 0:
        raise Unavailable("GPU clock check skipped: nvidia-smi failed (%d): %s" % (rc, (err or out).strip()))
    return parse_query(out)


def latch_findings(gpus, serving, floor_mhz=LATCH_FLOOR_MHZ):
    """One finding per GPU whose SM clock sits under the floor while the engine serves."""
    if not serving:
        return []
    out = []
    for gpu in gpus:
        if gpu["sm_mhz"] is not None and gpu["sm_mhz"] < floor_mhz:
            out.append({"setting": "GPU %s SM clock while serving" % gpu["index"],
                        "expected": ">= %d MHz" % floor_mhz, "found": "%d MHz" % gpu["sm_mhz"],
                        "fix": LATCH_FIX, "severity": "error"})
    return out
