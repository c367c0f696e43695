# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The memory saver's lifecycle as a pure state machine over what a node reads.

    not-installed -> added -> built -> installed -> loaded
                                           |-> wrong-srcversion (an older UVM is still loaded: reload or boot)

Blocking states stop the stage with a fix: unavailable (not a DGX Spark), kernel-missing (the 64 KiB kernel
is not installed yet), driver-mismatch (the release is pinned to one NVIDIA driver), other-version (another
release is registered), secure-boot-key-not-enrolled (a module signed with an unenrolled key would not load,
and would shadow the stock UVM), wrong-page-size (the 64 KiB kernel runs with other pages).
``assess`` returns the state and the next actions, ``assess_removal`` the
way back to the stock UVM module.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dkms, kmod

PACKING = "uvm_pack_sysmem_leaf_tables"
INSTALL_STEPS = ["dkms-add", "dkms-build", "dkms-install", "depmod", "initramfs"]


def _result(state, ok, actions=(), blocked=None, reboot=False, notes=()):
    return {"state": state, "ok": ok, "actions": list(actions), "blocked": blocked, "reboot": reboot,
            "notes": list(notes)}


def _precheck(r, want):
    """A blocking result shared by install and removal, or None."""
    if not r.get("spark"):
        return _result("unavailable", True, notes=[r.get("reason") or "memory saver skipped: not a DGX Spark"])
    if not r.get("kernel_installed"):
        return _result("kernel-missing", False, blocked=(
            "kernel %s is not installed. Fix: run the kernel stage (playbooks/kernel.yml) first." % want["kernel"]))
    return None


def _holds(r, want, installed):
    held = set(r.get("held") or [])
    wanted = set(want.get("hold") or [])
    if installed and wanted - held:
        return ["hold-packages"]
    if not installed and wanted & held:
        return ["unhold-packages"]
    return []


def assess(r, want):
    """State and next actions towards the memory saver loaded on ``want['kernel']``.

    ``want``: package, version, kernel, driver, hold (packages to hold while it is installed).
    ``r`` (readings): spark, reason, kernel_installed, running, page_size, dkms (parsed `dkms status`), source (the
    registered source tree exists), driver_disk (`modinfo -k KERNEL -F version nvidia`), driver_loaded,
    uvm_disk (kmod.on_disk), uvm_loaded (kmod.loaded), uvm_in_use, secure_boot, key (mok.parse_test_key),
    held (`apt-mark showhold`).
    """
    early = _precheck(r, want)
    if early:
        return early
    driver = want["driver"]
    if r.get("driver_disk") and r["driver_disk"] != driver:
        return _result("driver-mismatch", False, blocked=(
            "the NVIDIA module for %s is %s, but memory saver %s is pinned to %s. Fix: restore driver %s, or "
            "pin a memory saver release validated for %s." % (want["kernel"], r["driver_disk"], want["version"],
                                                            driver, driver, r["driver_disk"])))
    if r.get("running") == want["kernel"] and r.get("driver_loaded") and r["driver_loaded"] != driver:
        return _result("driver-mismatch", False, blocked=(
            "driver %s is loaded, memory saver %s is pinned to %s. Fix: boot with driver %s (reboot after a "
            "driver upgrade), or pin a validated release." % (r["driver_loaded"], want["version"], driver, driver)))
    rows = r.get("dkms") or []
    others = dkms.other_versions(rows, want["package"], want["version"])
    if others:
        return _result("other-version", False, blocked=(
            "%s %s is registered with DKMS. Fix: remove it first (memory_saver_state: absent with "
            "memory_saver_version: %s), then install %s." % (want["package"], ", ".join(others), others[0],
                                                             want["version"])))
    registered = dkms.registration(rows, want["package"], want["version"], want["kernel"])
    if r.get("secure_boot") and r.get("key") != "enrolled":
        return _result("secure-boot-key-not-enrolled", False, blocked=(
            "Secure Boot is on and the DKMS signing key is %s. A module signed with it would not load." % (
                r.get("key") or "unknown")))
    holds = _holds(r, want, installed=True)
    if registered is None:
        steps = INSTALL_STEPS if r.get("source") else ["copy-source"] + INSTALL_STEPS
        return _result("not-installed", False, steps + holds)
    if registered == "added":
        return _result("added", False, INSTALL_STEPS[1:] + holds)
    if registered == "built":
        return _result("built", False, INSTALL_STEPS[2:] + holds)
    disk = r.get("uvm_disk") or {}
    if kmod.owner(disk.get("filename")) != "dkms":
        return _result("installed", False, ["depmod", "initramfs"] + holds, notes=[
            "DKMS says installed, but modinfo resolves %s. depmod should select the DKMS module." % (
                disk.get("filename") or "nothing")])
    if r.get("running") != want["kernel"]:
        return _result("installed", True, holds, notes=[
            "installed for %s; it loads once the node runs that kernel (kernel stage)." % want["kernel"]])
    if r.get("page_size") not in (None, 65536):
        return _result("wrong-page-size", False, blocked=(
            "%s runs with %s-byte pages; the memory saver is built for 65536. Fix: check the kernel's "
            "CONFIG_ARM64_64K_PAGES (/boot/config-%s) and the kernel stage." % (want["kernel"], r["page_size"],
                                                                              want["kernel"])))
    loaded = r.get("uvm_loaded") or {}
    if not loaded.get("loaded"):
        return _result("installed", False, ["load-uvm"] + holds)
    if loaded.get("srcversion") != disk.get("srcversion"):
        busy = bool(r.get("uvm_in_use"))
        return _result("wrong-srcversion", False, holds if busy else ["reload-uvm"] + holds, reboot=busy, notes=[
            "loaded nvidia_uvm %s, on disk %s%s" % (loaded.get("srcversion"), disk.get("srcversion"),
                                                    " (in use: a reboot loads it)" if busy else "")])
    if (loaded.get("parameters") or {}).get(PACKING) != "Y":
        busy = bool(r.get("uvm_in_use"))
        return _result("packing-off", False, holds if busy else ["reload-uvm"] + holds, reboot=busy, notes=[
            "%s is %s; the module was loaded with packing off" % (PACKING, (loaded.get("parameters") or {}).get(
                PACKING))])
    return _result("loaded", not holds, holds, notes=["signer: %s" % disk.get("signer")])


def assess_removal(r, want):
    """Actions back to the packaged (stock) UVM module and an unheld driver."""
    early = _precheck(r, want)
    if early:
        return early if early["state"] == "unavailable" else _result("removed", True)
    rows = r.get("dkms") or []
    mine = sorted({row["version"] for row in rows if row["module"] == want["package"]})
    holds = _holds(r, want, installed=False)
    if mine:
        return _result("installed", False, ["dkms-remove", "depmod", "initramfs"] + holds,
                       notes=["registered: %s" % ", ".join(mine)])
    disk = r.get("uvm_disk") or {}
    if kmod.owner(disk.get("filename")) == "dkms":
        return _result("stock-not-restored", False, ["reinstall-stock-uvm", "depmod", "initramfs"] + holds, notes=[
            "no registration is left, yet modinfo resolves %s" % disk.get("filename")])
    loaded = r.get("uvm_loaded") or {}
    if r.get("running") == want["kernel"] and PACKING in (loaded.get("parameters") or {}):
        busy = bool(r.get("uvm_in_use"))
        return _result("patched-loaded", False, holds if busy else ["reload-uvm"] + holds, reboot=busy)
    return _result("removed", not holds, holds)
