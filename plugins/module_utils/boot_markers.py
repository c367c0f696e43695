# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A release's boot-log markers over an engine's log: the required lines it lacks, the forbidden lines it has, the
kernel families that fell back. One source for the serve stage's check (serve_smoke) and the filters."""

from __future__ import annotations

import re


def missing(log, required):
    """Markers (regular expressions) that ``log`` does not match."""
    return [m for m in required or [] if not re.search(m, log or "", re.M)]


def found(log, forbidden):
    """Forbidden markers that ``log`` matches, each with its first matching line."""
    out = []
    lines = (log or "").splitlines()
    for marker in forbidden or []:
        hit = next((line for line in lines if re.search(marker, line)), None)
        if hit is not None:
            out.append("%s: %s" % (marker, hit.strip()))
    return out


def fallbacks(log, fallback, families):
    """Lines of ``log`` that report a fallback (``fallback``, a regular expression), each named by the first kernel
    family (``families``: name -> regular expression) the line mentions."""
    if not fallback:
        return []
    out = []
    for line in (log or "").splitlines():
        if re.search(fallback, line):
            name = next((n for n, rx in (families or {}).items() if re.search(rx, line)), "an unnamed kernel family")
            out.append("%s fell back: %s" % (name, line.strip()))
    return out
