# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""How fragmented each checkpoint file is, read with e2fsprogs' own tools; nothing is ever changed.

``e4defrag -c -v FILE`` (statistics only) prints the file's extents and ext4's best count for its
size ("Total/best extents 6/1"). Where it cannot run (not ext4, not installed) ``filefrag FILE`` still
counts the extents, but the best count is then unknown, and the report says so: an unknown layout is
a warning, never a clean one.
"""

from __future__ import annotations

import re

_TOTAL_BEST = re.compile(r"Total/best extents\s+(\d+)/(\d+)")
_FILEFRAG = re.compile(r"^(?P<path>.*): (?P<n>\d+) extents? found$", re.M)


def parse_e4defrag(text):
    """(extents, best) from one file's ``e4defrag -c -v`` output, or None if it has no count."""
    match = _TOTAL_BEST.search(text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_filefrag(text):
    """{path: extents} from ``filefrag`` output (one line per file)."""
    return {m.group("path"): int(m.group("n")) for m in _FILEFRAG.finditer(text or "")}


def filesystem(mounts, path):
    """The filesystem type of the mount holding ``path``, from /proc/self/mounts text."""
    best, kind = "", None
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def report(rows):
    """Summary of per-file rows ({path, extents, best}): the fragmented files and the files not judged."""
    fragmented = [r for r in rows if r["best"] is not None and r["extents"] > r["best"]]
    unknown = [r for r in rows if r["best"] is None]
    return {
        "fragmented": [r["path"] for r in fragmented],
        "unknown": [r["path"] for r in unknown],
        "status": "fragmented" if fragmented else ("unknown" if unknown else "clean"),
    }
