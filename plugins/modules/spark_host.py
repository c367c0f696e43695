# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: spark_host
short_description: DGX Spark host checks - UEFI boot order, fan floor, DRM card, DGX OS release
version_added: 0.3.0
description:
  - B(UEFI boot order) (C(efibootmgr -v)) - the installed OS boots before any network (PXE, HTTP) entry; a PXE entry
    first costs about a minute on every boot. With O(boot_order_ok) the OS entry is moved to the front
    (C(efibootmgr --bootorder)); without it a network entry first is a warning whose fix gives that consent.
  - B(Fan floor) (the dgx-spark-fan-control project) - its kernel module built for the running kernel and loaded,
    its cooling device C(dgx_ec_fan_floor) registered, and its unit O(fan_unit) installed, enabled and running. Only
    the first missing layer is reported; a unit that is installed but not enabled and running is enabled and
    started (C(systemctl enable --now)).
  - B(DRM card) - a card under C(/sys/class/drm) owned by the nvidia driver, and no process holding DRM master on
    it (C(/sys/kernel/debug/dri/<n>/clients)); the display carve-out allocates there.
  - B(DGX OS release) - the version of C(dgx-spark-ota-update-meta) (the release's own numbering, 26.09.2) is
    O(dgx_os_min) or later; C(/etc/dgx-release) is read for what the node says it is.
  - Each check that finds something a run cannot change is a finding (RV(findings)) with its fix; an error among
    them fails the module (after its changes are made), so a run stops on it and the doctor shows it.
  - Every item needs a DGX Spark. Elsewhere (a lab node) nothing is read or written and each item is listed in
    RV(skipped_checks) with the reason; the lab never pretends to be a Spark.
options:
  dgx_os_min:
    description: The oldest DGX OS release (version of dgx-spark-ota-update-meta) the recipe runs on.
    type: str
    required: true
  boot_order_ok:
    description: Consent to reorder the UEFI boot entries so the installed OS boots first.
    type: bool
    default: false
  fan_unit:
    description: The fan floor's systemd unit.
    type: str
    default: dgx-fan-control.service
attributes:
  check_mode:
    support: full
    description: Reads efibootmgr, sysfs, debugfs, systemctl and dpkg-query; changes nothing in check mode.
  diff_mode:
    support: full
    description: The boot order and the unit's state before and after.
  idempotent:
    support: full
    description: A second run finds the boot order and the unit as wanted.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: DGX Spark host checks
  dgxspark.ds41f.spark_host:
    dgx_os_min: "26.09.2"
    boot_order_ok: true
"""

RETURN = r"""
findings:
  description: What the checks found that a run cannot change, each with setting, expected, found, fix, severity and
    the object it is about.
  returned: always
  type: list
  elements: dict
readings:
  description: What was read (boot order, fan floor layers, DRM cards and masters, DGX OS release).
  returned: always
  type: dict
skipped_checks:
  description: The checks not made here, each C({check, reason}) (a node that is not a DGX Spark).
  returned: when a check was not made
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, obj
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dgx_os, drm, efi, fan, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host

CHECKS = ("UEFI boot order", "fan floor", "DRM card", "DGX OS release")
RUN = "ds41f run host_baseline"
FAN_GUIDE = "github.com/christopherowen/dgx-spark-fan-control docs/installation.md"


def finding(setting, expected, found, fix, about, severity="error"):
    return {"setting": setting, "expected": expected, "found": found, "fix": fix, "severity": severity,
            "object": obj(*about)}


def boot_order(host, module, plan, consent):
    """Findings about the boot order; with consent, the change that puts the OS first."""
    try:
        entries = efi.read(host)
    except Unavailable as why:
        return [finding("UEFI boot order", "readable", "not read: %s" % why,
                        "apt-get install efibootmgr on the node, then ds41f doctor (efibootmgr needs efivarfs at "
                        "/sys/firmware/efi/efivars)", ("uefi", "BootOrder"), "warn")], None
    wanted = efi.wanted_order(entries)
    if wanted == entries["order"]:
        return [], entries
    command = "efibootmgr --bootorder %s" % ",".join(wanted)
    if not consent:
        return [finding("UEFI boot order", "the installed OS first: " + efi.describe(entries, wanted[:1]),
                        efi.describe(entries, entries["order"]),
                        "%s -e '{\"host_baseline_boot_order_ok\": true}' (on the node: %s)" % (RUN, command),
                        ("uefi", "BootOrder"), "warn")], entries
    plan.change("UEFI BootOrder", ",".join(wanted), ",".join(entries["order"]), command,
                lambda: module.run_command(["efibootmgr", "--bootorder", ",".join(wanted)], check_rc=True),
                fix=RUN, about=("uefi", "BootOrder"))
    return [], entries


FAN_FINDINGS = {
    "module file": ("%s built for the running kernel" % fan.MODULE,
                    "install dgx-spark-fan-control for {kernel} (DKMS: dkms install -m dgx-spark-fan-control -v "
                    "<version> -k {kernel}; %s), then %s" % (FAN_GUIDE, RUN), ("kmod", fan.MODULE)),
    "module loaded": ("%s loaded" % fan.MODULE,
                      "modprobe %s on the node (and list it in /etc/modules-load.d/%s.conf for boots), then %s" % (
                          fan.MODULE, fan.MODULE, RUN), ("kmod", fan.MODULE)),
    "cooling device": ("cooling device %s registered" % fan.COOLING_DEVICE,
                       "journalctl -k -b | grep -E 'dgx|fan.floor|arm.ffa' on the node: the driver loaded but its "
                       "probe refused the firmware (dgx-spark-fan-control docs/troubleshooting.md)",
                       ("cooling_device", fan.COOLING_DEVICE)),
    "unit installed": ("{unit} installed",
                       "install dgx-spark-fan-control's systemd/dgx-fan-control.service in /etc/systemd/system and "
                       "systemctl daemon-reload on the node, then %s" % RUN, ("unit", "{unit}")),
}


def fan_floor(host, module, plan, unit):
    kernel = platform.kernel_release(host)
    state = fan.read(host, kernel, unit)
    missing = fan.first_missing(state)
    if missing == "unit running":
        now = ", ".join(state["unit"].get(k) or "unknown" for k in ("UnitFileState", "ActiveState"))
        plan.change(unit, "enabled, active", now, "systemctl enable --now %s" % unit,
                    lambda: module.run_command(["systemctl", "enable", "--now", unit], check_rc=True),
                    fix=RUN, about=("unit", unit))
        return [], state
    if missing is None:
        return [], state
    expected, fix, about = FAN_FINDINGS[missing]
    found = {"module file": "no %s for %s" % (fan.MODULE, kernel), "module loaded": "not loaded",
             "cooling device": "no %s in /sys/class/thermal" % fan.COOLING_DEVICE,
             "unit installed": "%s is %s" % (unit, state["unit"].get("LoadState") or "unknown")}[missing]
    return [finding("fan floor: " + missing, expected.format(unit=unit), found,
                    fix.format(kernel=kernel, unit=unit), (about[0], about[1].format(unit=unit)))], state


def drm_card(host):
    cards = drm.cards(host)
    card = drm.nvidia_card(cards)
    if card is None:
        seen = ", ".join("%s (%s)" % (c["card"], c["driver"] or "no driver") for c in cards) or "no card"
        return [finding("DRM card", "a card owned by nvidia", seen,
                        "%s -e '{\"host_baseline_reboot_ok\": true}' (nvidia-drm comes up with modeset=1 after the "
                        "reboot)" % RUN, ("drm", "nvidia card"))], {"cards": cards}
    try:
        held = drm.masters(host, card)
    except (Unavailable, ValueError) as why:
        return [finding("DRM master on " + card["card"], "no process holds it", "not read: %s" % why,
                        "mount debugfs on the node (mount -t debugfs none /sys/kernel/debug), then ds41f doctor",
                        ("drm", card["card"]), "warn")], {"cards": cards}
    readings = {"cards": cards, "masters": held}
    if not held:
        return [], readings
    who = ", ".join("%s (pid %s)" % (c["command"], c["pid"]) for c in held)
    pids = " ".join(str(c["pid"]) for c in held if c["pid"])
    return [finding("DRM master on " + card["card"], "no process holds it", "held by " + who,
                    "stop what holds it on the node: systemctl stop display-manager if it is a desktop, else "
                    "kill %s" % (pids or "the process"), ("drm", card["card"]))], readings


def release(host, floor):
    expected = "%s %s or later" % (dgx_os.META_PACKAGE, floor)
    about = ("package", dgx_os.META_PACKAGE)
    try:
        found = dgx_os.read(host)
    except Unavailable as why:
        return [finding("DGX OS release", expected, "not read: %s" % why, "run on DGX OS", about)], None
    if dgx_os.meets(found, floor):
        return [], found
    return [finding("DGX OS release", expected, dgx_os.describe(found),
                    "update DGX OS on the node to %s or later: apt-get update && apt-get install %s && apt-get "
                    "full-upgrade, then reboot. NVIDIA packages change with it, so take the memory saver off first: "
                    "ds41f run memory_saver -e '{\"memory_saver_state\": \"absent\"}'" % (floor, dgx_os.META_PACKAGE),
                    about)], found


MODULE_SPEC = dict(
    argument_spec={
        "dgx_os_min": {"type": "str", "required": True},
        "boot_order_ok": {"type": "bool", "default": False},
        "fan_unit": {"type": "str", "default": fan.UNIT},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    reason = platform.not_spark(host)
    if reason:
        module.exit_json(changed=False, actions=[], drift=[], findings=[], readings={},
                         skipped_checks=[{"check": check, "reason": reason} for check in CHECKS])
    findings, readings = [], {}
    for name, check in (("boot_order", lambda: boot_order(host, module, plan, p["boot_order_ok"])),
                        ("fan_floor", lambda: fan_floor(host, module, plan, p["fan_unit"])),
                        ("drm", lambda: drm_card(host)),
                        ("dgx_os", lambda: release(host, p["dgx_os_min"]))):
        found, readings[name] = check()
        findings.extend(found)
    result = plan.result(findings=findings, readings=readings)
    errors = [f for f in findings if f["severity"] == "error"]
    if errors:
        module.fail_json(msg="; ".join("%s: %s (expected %s). Fix: %s" % (
            f["setting"], f["found"], f["expected"], f["fix"]) for f in errors), **result)
    module.exit_json(**result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
