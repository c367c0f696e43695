# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""`dkms status`: one registration per line, in the formats DKMS 2.x and 3.x print."""

from __future__ import annotations


def parse_status(text):
    """[{module, version, kernel, arch, state, note}] from `dkms status` output.

    DKMS 3: ``name/version, kernel, arch: state (note)`` and ``name/version: added`` (no kernel yet);
    DKMS 2: ``name, version, kernel, arch: state``.
    """
    rows = []
    for line in (text or "").splitlines():
        line = line.strip()
        if ": " not in line:
            continue
        head, tail = line.split(": ", 1)
        state, _, note = tail.partition(" ")
        parts = [p.strip() for p in head.split(",")]
        if "/" in parts[0]:
            module, version = parts[0].split("/", 1)
            rest = parts[1:]
        elif len(parts) >= 2:
            module, version = parts[0], parts[1]
            rest = parts[2:]
        else:
            continue
        rows.append({
            "module": module,
            "version": version,
            "kernel": rest[0] if rest else None,
            "arch": rest[1] if len(rest) > 1 else None,
            "state": state,
            "note": note.strip() or None,
        })
    return rows


def registration(rows, module, version, kernel):
    """The state of ``module/version`` for ``kernel``: 'installed', 'built', 'added' (registered, nothing
    built for any kernel yet) or None (not registered)."""
    mine = [r for r in rows if r["module"] == module and r["version"] == version]
    for row in mine:
        if row["kernel"] == kernel:
            return row["state"]
    return "added" if mine else None


def other_versions(rows, module, version):
    """Registrations of the same module at another version (they must go before this one is added)."""
    return sorted({r["version"] for r in rows if r["module"] == module and r["version"] != version})
