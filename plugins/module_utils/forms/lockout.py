# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Values that would lock the admin out of every node, refused with their consequence.

Refused here, by ``validation``: unit lists against each other and the units recovery needs. The boot target is a
form of its own (``target_problem``), and sshd's keywords are ``sshd``'s.


The host baseline disables, masks and enables units and sets the boot target. A unit that recovery depends on
(ssh, the container runtime, the network, the units the baseline protects) in its disable or mask list leaves a
node that no one reaches but at its console, after the next reboot at the latest; a boot target without the
network and sshd does the same at once. None of these has an override: the collection itself reaches every node
over ssh and serves from containers.
"""

from __future__ import annotations

SSH_UNITS = ("ssh.service", "sshd.service", "ssh.socket", "sshd.socket")
RUNTIME_COMPANIONS = ("docker.socket", "containerd.service")
NETWORK_UNITS = ("systemd-networkd.service", "systemd-networkd.socket", "NetworkManager.service",
                 "systemd-resolved.service", "dbus.service", "dbus.socket", "systemd-journald.service")
BOOT_TARGETS = ("multi-user.target", "graphical.target")
# Targets that boot without the network or sshd, or not at all.
STRANDING_TARGETS = {"rescue.target": "boots to a root shell on the console with no network and no sshd",
                     "emergency.target": "boots to the console's emergency shell with no network and no sshd",
                     "poweroff.target": "powers the node off at every boot", "halt.target": "halts at every boot",
                     "reboot.target": "reboots at every boot, for ever", "kexec.target": "reboots at every boot",
                     "shutdown.target": "shuts down at every boot", "sysinit.target": "stops before the network",
                     "basic.target": "stops before the network and sshd", "network.target": "stops before sshd"}
LISTS = {"host_baseline_disabled_units": "disabled and stopped", "host_baseline_masked_units": "masked"}


def recovery_units(values):
    """{unit: why recovery needs it} from the recipe's own lists and the fixed ones."""
    health = values.get("host_baseline_health") if isinstance(values.get("host_baseline_health"), dict) else {}
    out = {unit: "sshd: every stage, Ansible and the admin log in through it" for unit in SSH_UNITS}
    if isinstance(health.get("ssh_unit"), str):
        out[health["ssh_unit"]] = "sshd (host_baseline_health.ssh_unit): every login and the health timer need it"
    runtime = values.get("host_baseline_container_units")
    for unit in list(runtime if isinstance(runtime, list) else []) + list(RUNTIME_COMPANIONS):
        if isinstance(unit, str):
            out.setdefault(unit, "the container runtime: the image and serve stages and the engine run in it")
    for item in values.get("host_baseline_protected_services") or []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out.setdefault(item["name"], "a service the baseline keeps reachable (host_baseline_protected_services)")
    for unit in NETWORK_UNITS:
        out.setdefault(unit, "the node's network and system bus: without it no one reaches the node")
    return out


def target_problem(target):
    """(reason, fix) when the boot target would strand every node, else None."""
    if target in BOOT_TARGETS:
        return None
    why = STRANDING_TARGETS.get(target, "is not a target the baseline knows to boot with the network and sshd")
    return ("as the boot target %s: every node would come up unreachable (only a console brings it back)." % why,
            "use multi-user.target (headless, the baseline's) or graphical.target.")


def problems(values):
    """[(field, value, reason, fix)] for every unit list entry that would strand a node."""
    needed = recovery_units(values)
    out = []
    for name, verb in LISTS.items():
        units = values.get(name)
        for i, unit in enumerate(units if isinstance(units, list) else []):
            if unit in needed:
                out.append(("%s[%d]" % (name, i), unit, "would be %s on every node: that is %s. After the next "
                            "reboot at the latest only a console reaches the node." % (verb, needed[unit]),
                            "remove %s from %s." % (unit, name)))
    return out
