# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Boot readings: GRUB's menu (grub.cfg), its environment block (grubenv), a GRUB_DEFAULT pin, /proc/cmdline,
and an identity of the current boot. Parsers take text; readers take a ``Host``; nothing here writes."""

from __future__ import annotations

import re
import shlex

GRUB_CFG = "/boot/grub/grub.cfg"
GRUBENV = "/boot/grub/grubenv"
CMDLINE = "/proc/cmdline"

# menuentry 'Title' --class ... $menuentry_id_option 'gnulinux-...' {   (or --id 'x', or a bare quoted id)
_MENU = re.compile(r"^\s*(menuentry|submenu)\s+'([^']*)'(.*)$")
_ID = re.compile(r"(?:\$menuentry_id_option|--id)\s+'([^']+)'|\s'([^']+)'\s*\{?\s*$")
# Ubuntu's 10_linux ids: gnulinux-<release>-advanced-<uuid>; recovery and init variants use other words.
_ADVANCED = re.compile(r"^gnulinux-(.+)-advanced-[0-9A-Fa-f-]+$")
_TITLE_RELEASE = re.compile(r"with Linux (\S+?)(?:\s+\(.*\))?$")


def parse_grub_cfg(text):
    """Menu entries in order: id, title, the submenu path GRUB accepts (``submenu-id>entry-id``), the kernel
    release and whether it is the plain (bootable by default) entry of that release."""
    entries, stack = [], []  # stack of (kind, id) for every open '{'
    for line in (text or "").splitlines():
        stripped = line.strip()
        match = _MENU.match(line)
        if match:
            kind, title, rest = match.groups()
            found = _ID.search(rest)
            ident = (found.group(1) or found.group(2)) if found else title
            if kind == "menuentry":
                parents = [i for k, i in stack if k == "submenu"]
                release = _ADVANCED.match(ident)
                titled = _TITLE_RELEASE.search(title)
                entries.append({
                    "id": ident,
                    "title": title,
                    "path": ">".join(parents + [ident]),
                    "release": release.group(1) if release else (titled.group(1) if titled else None),
                    "plain": bool(release) and "(" not in title,
                })
            if stripped.endswith("{"):
                stack.append((kind, ident))
            continue
        if stripped.endswith("{"):
            stack.append(("block", None))
        elif stripped == "}" and stack:
            stack.pop()
    return entries


def entry_path(entries, release):
    """The path of the plain entry that boots ``release`` (what grub-reboot and GRUB_DEFAULT take), or None."""
    for entry in entries:
        if entry["plain"] and entry["release"] == release:
            return entry["path"]
    return None


def parse_grubenv(text):
    """grubenv (or `grub-editenv list`) as {name: value}; the '#' padding and header are skipped."""
    env = {}
    for line in (text or "").splitlines():
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        env[key] = value
    return env


def parse_grub_default(text):
    """The value the last GRUB_DEFAULT= assignment of a /etc/default/grub(.d) file sets, or None."""
    value = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("GRUB_DEFAULT="):
            raw = stripped.split("=", 1)[1]
            try:
                parts = shlex.split(raw)
            except ValueError:
                parts = [raw]
            value = parts[0] if parts else ""
    return value


def parse_cmdline(text):
    """/proc/cmdline: the kernel image, the release it names and the other parameters."""
    words = (text or "").split()
    image = next((w.split("=", 1)[1] for w in words if w.startswith("BOOT_IMAGE=")), None)
    release = None
    if image:
        match = re.search(r"vmlinuz-(\S+)$", image)
        release = match.group(1) if match else None
    return {"image": image, "release": release, "params": [w for w in words if not w.startswith("BOOT_IMAGE=")]}


def missing_params(text, wanted):
    """The parameters of ``wanted`` (``name=value`` or a bare flag) that the command line ``text`` does not set, in
    order. The kernel takes the last value a parameter is given, so ``kho=off kho=on`` lacks ``kho=off``."""
    last = {}
    for param in parse_cmdline(text)["params"]:
        last[param.split("=", 1)[0]] = param
    return [param for param in wanted if last.get(param.split("=", 1)[0]) != param]


def boot_token(host):
    """Changes with every boot: the kernel's boot id, and PID 1's start time (which also changes when a lab
    node's container restarts, while the host's boot id does not)."""
    boot_id = (host.read("/proc/sys/kernel/random/boot_id", "") or "").strip()
    stat = host.read("/proc/1/stat", "") or ""
    # Field 22 is the start time; the command (field 2) may hold spaces, so count from the closing ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    start = fields[19] if len(fields) > 19 else ""
    return "%s/%s" % (boot_id, start)


def read(host):
    """What the bootloader would do: whether GRUB is here, its menu, its environment block."""
    return {
        "present": host.exists(GRUB_CFG),
        "entries": parse_grub_cfg(host.read(GRUB_CFG, "")),
        "env": parse_grubenv(host.read(GRUBENV, "")),
    }
