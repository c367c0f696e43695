# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""What kind of node this is: kernel, page size, container or DGX Spark, driver, firmware state."""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable

SPARK_GPU = re.compile(r"\bGB10\b")
_DRIVER_RE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")


def container(host):
    """The container engine a node runs in ('podman', 'docker', ...), or None on bare metal."""
    if host.exists("/run/.containerenv"):
        return "podman"
    if host.exists("/.dockerenv"):
        return "docker"
    environ = host.read("/proc/1/environ", "")
    match = re.search(r"(?:^|\x00)container=([^\x00]+)", environ)
    return match.group(1) if match else None


def gpu_names(host):
    """GPU names from nvidia-smi ('NVIDIA GB10' on a DGX Spark); [] without a driver."""
    try:
        rc, out, _ = host.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    except Unavailable:
        return []
    return [line.strip() for line in out.splitlines() if line.strip()] if rc == 0 else []


def is_spark(host):
    """A DGX Spark is the node whose GPU is a GB10."""
    return any(SPARK_GPU.search(name) for name in gpu_names(host))


def not_spark(host):
    """None on a DGX Spark, else why not, naming the node kind ("not a DGX Spark (a podman container)")."""
    if is_spark(host):
        return None
    kind = container(host)
    return "not a DGX Spark (%s)" % ("a %s container" % kind if kind else "no GB10 found")


def require_spark(host, what):
    """Raise Unavailable unless this node is a DGX Spark; the reason names the node kind."""
    reason = not_spark(host)
    if reason:
        raise Unavailable("%s skipped: %s" % (what, reason))


def kernel_release(host):
    return (host.read("/proc/sys/kernel/osrelease", "") or "").strip() or None


def page_size(host):
    """The running kernel's base page size from /proc/self/smaps' KernelPageSize (kB)."""
    smaps = host.read("/proc/self/smaps", "") or ""
    match = re.search(r"^KernelPageSize:\s+(\d+) kB", smaps, re.M)
    return int(match.group(1)) * 1024 if match else None


def driver_version(host):
    text = host.read("/proc/driver/nvidia/version")
    if text is None:
        return None
    match = _DRIVER_RE.search(text)
    return match.group(1) if match else None


def module_srcversion(host, module):
    value = host.read("/sys/module/%s/srcversion" % module)
    return value.strip() if value else None


def governor(host):
    value = host.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    return value.strip() if value else None


def secure_boot(host):
    """True/False from the SecureBoot EFI variable (its last byte), None without EFI."""
    for name in host.listdir("/sys/firmware/efi/efivars"):
        if name.startswith("SecureBoot-"):
            try:
                with open(host.path("/sys/firmware/efi/efivars/" + name), "rb") as handle:
                    data = handle.read()
            except OSError:
                return None
            return bool(data[-1]) if data else None
    return None


def summary(host):
    """The readings the cross-node alignment compares; None where a reading does not exist here."""
    return {
        "kernel": kernel_release(host),
        "page_size": page_size(host),
        "container": container(host),
        "dgx_spark": is_spark(host),
        "driver": driver_version(host),
        "uvm_srcversion": module_srcversion(host, "nvidia_uvm"),
        "secure_boot": secure_boot(host),
        "governor": governor(host),
    }
