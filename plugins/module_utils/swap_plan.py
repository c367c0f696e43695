# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Swap for two page sizes, as pure functions: a swap header made on 4 KiB pages does not work on a 64 KiB
kernel, so the 64 KiB file lives beside the original and both are `noauto` in fstab; the kernel stage's
memory service turns on the one that matches the running page size at boot.
"""

from __future__ import annotations

SIGNATURES = (b"SWAPSPACE2", b"SWAP-SPACE")
PAGE_SIZES = (4096, 8192, 16384, 65536)


def header_page_size(head):
    """The page size a swap header was made for (its signature ends the first page), or None."""
    for size in PAGE_SIZES:
        if len(head) >= size and head[size - 10:size] in SIGNATURES:
            return size
    return None


def active_swaps(proc_swaps):
    """Paths of active swap areas from /proc/swaps."""
    return [line.split()[0] for line in (proc_swaps or "").splitlines()[1:] if line.strip()]


def _fields(line):
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    parts = stripped.split()
    return parts if len(parts) >= 3 else None


def _with_noauto(line):
    parts = _fields(line)
    while len(parts) < 6:
        parts.append("defaults" if len(parts) == 3 else "0")
    options = [o for o in parts[3].split(",") if o]
    if "noauto" in options:
        return line
    parts[3] = ",".join(options + ["noauto"])
    return "\t".join(parts)


def plan_fstab(text, original, new_file):
    """fstab with ``original`` set noauto and a noauto line for ``new_file``; unchanged when already so."""
    lines = (text or "").splitlines()
    out, have_new = [], False
    for line in lines:
        parts = _fields(line)
        if parts and parts[0] == original and parts[2] == "swap":
            line = _with_noauto(line)
        if parts and parts[0] == new_file:
            have_new = True
            line = _with_noauto(line)
        out.append(line)
    if not have_new:
        out.append("%s\tnone\tswap\tnoauto\t0\t0" % new_file)
    return "\n".join(out) + "\n"


def revert_fstab(text, before, original, new_file):
    """fstab without ``new_file`` and with the ``original`` line as it was in ``before`` (the backup)."""
    old_line = None
    for line in (before or "").splitlines():
        parts = _fields(line)
        if parts and parts[0] == original:
            old_line = line
    out = []
    for line in (text or "").splitlines():
        parts = _fields(line)
        if parts and parts[0] == new_file:
            continue
        if parts and parts[0] == original and old_line is not None:
            line = old_line
        out.append(line)
    return "\n".join(out) + "\n"
