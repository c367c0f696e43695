# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The DGX Spark fan floor of the dgx-spark-fan-control project, layer by layer: the kernel module built for the
running kernel (DKMS or by hand), the module loaded, the cooling device it registers (`dgx_ec_fan_floor` under
/sys/class/thermal), and the controller's systemd unit. The seeds' bench pre-cools every node through it.

Each layer needs the one before it, so only the first missing layer is a finding: a missing module explains the
missing cooling device and an idle unit."""

from __future__ import annotations

MODULE = "dgx_ec_fan_control"
COOLING_DEVICE = "dgx_ec_fan_floor"
UNIT = "dgx-fan-control.service"
LAYERS = ("module file", "module loaded", "cooling device", "unit installed", "unit running")


def module_file(host, kernel, module=MODULE):
    """The file `modprobe` would load for ``kernel`` (`modinfo -k KERNEL -F filename`), or None."""
    rc, out, _ = host.run(["modinfo", "-k", kernel, "-F", "filename", module])
    return (out.strip() or None) if rc == 0 else None


def cooling_devices(host, kind=COOLING_DEVICE):
    """The /sys/class/thermal cooling devices of ``kind`` (their `type` file), by name."""
    return [name for name in host.listdir("/sys/class/thermal") if name.startswith("cooling_device")
            and (host.read("/sys/class/thermal/%s/type" % name) or "").strip() == kind]


def unit_state(host, unit=UNIT):
    """LoadState, UnitFileState and ActiveState of the unit (`systemctl show`); {} without systemd."""
    rc, out, _ = host.run(["systemctl", "show", "--property=LoadState,UnitFileState,ActiveState", "--", unit])
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line) if rc == 0 else {}


def read(host, kernel, unit=UNIT):
    return {"kernel": kernel, "module_file": module_file(host, kernel), "loaded": host.exists("/sys/module/" + MODULE),
            "cooling_devices": cooling_devices(host), "unit": unit_state(host, unit)}


def first_missing(state):
    """The first layer of LAYERS that is not there (None when the fan floor is whole)."""
    unit = state["unit"]
    present = {
        "module file": bool(state["module_file"]),
        "module loaded": state["loaded"],
        "cooling device": bool(state["cooling_devices"]),
        "unit installed": unit.get("LoadState") == "loaded",
        "unit running": unit.get("UnitFileState") == "enabled" and unit.get("ActiveState") == "active",
    }
    return next((layer for layer in LAYERS if not present[layer]), None)
