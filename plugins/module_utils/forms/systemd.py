# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Unit names and time spans as systemd itself parses them (src/basic/unit-name.c, src/basic/time-util.c).

A time span is one or more numbers, each with an optional unit, spaces allowed between them (``1h 30min``,
``1.5h``, ``90``: seconds); ``infinity`` is systemd's "no limit". Units are case-sensitive: ``m`` is minutes and
``M`` months. The forms here take only finite spans above zero: every span the collection renders bounds a wait
or paces a timer, and 0 or ``infinity`` turns the bound off.
"""

from __future__ import annotations

import re

# {unit: microseconds}, systemd's own table (parse_time's).
_USEC = 1
_SEC = 1000000
SPAN_UNITS = {
    "seconds": _SEC, "second": _SEC, "sec": _SEC, "s": _SEC,
    "minutes": 60 * _SEC, "minute": 60 * _SEC, "min": 60 * _SEC, "m": 60 * _SEC,
    "months": 2629800 * _SEC, "month": 2629800 * _SEC, "M": 2629800 * _SEC,
    "msec": 1000, "ms": 1000,
    "hours": 3600 * _SEC, "hour": 3600 * _SEC, "hr": 3600 * _SEC, "h": 3600 * _SEC,
    "days": 86400 * _SEC, "day": 86400 * _SEC, "d": 86400 * _SEC,
    "weeks": 604800 * _SEC, "week": 604800 * _SEC, "w": 604800 * _SEC,
    "years": 31557600 * _SEC, "year": 31557600 * _SEC, "y": 31557600 * _SEC,
    "usec": _USEC, "us": _USEC, "\u00b5s": _USEC, "\u03bcs": _USEC,
}
_UNIT_ALTERNATION = "|".join(sorted((re.escape(u) for u in SPAN_UNITS), key=len, reverse=True))
# One number and its unit: systemd skips spaces before the number and between it and the unit.
_PART = re.compile(r"[ \t]*(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]*))?[ \t]*(?P<unit>%s)?(?![A-Za-z])" % _UNIT_ALTERNATION)
INFINITY = "infinity"
SPAN_TEXT = ("a number and a unit, such as 30s, 10min or 1h 30min (units: us, ms, s, min, h, d, w; M is months, "
             "m minutes)")

# systemd's unit types, and the characters of a unit name (VALID_CHARS and @ for an instance).
UNIT_TYPES = ("service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice",
              "scope")
_UNIT = re.compile(r"(?P<prefix>[A-Za-z0-9:_.\\-]+)(?:@(?P<instance>[A-Za-z0-9:_.\\@-]*))?\.(?P<type>%s)" %
                   "|".join(UNIT_TYPES))
UNIT_NAME_MAX = 255


def parse_span(text):
    """Microseconds of a systemd time span, ``float('inf')`` for infinity; ValueError where systemd refuses it."""
    if not isinstance(text, str):
        raise ValueError("not a string")
    stripped = text.strip(" \t")
    if stripped == INFINITY:
        return float("inf")
    if not stripped:
        raise ValueError("empty")
    total, pos = 0, 0
    while pos < len(text):
        match = _PART.match(text, pos)
        if not match:
            if text[pos:].strip(" \t"):
                raise ValueError("unparsable at %r" % text[pos:])
            break
        factor = SPAN_UNITS[match.group("unit")] if match.group("unit") else _SEC
        frac = match.group("frac") or ""
        total += int(match.group("int")) * factor + (int(frac) * factor // 10 ** len(frac) if frac else 0)
        pos = match.end()
    return total


def span_problem(value):
    """(reason, fix) when ``value`` is not a finite systemd time span above zero, else None."""
    try:
        usec = parse_span(value)
    except ValueError:
        return ("is not a systemd time span, so systemd refuses the line (or the unit) that carries it.",
                "write %s." % SPAN_TEXT)
    if usec == float("inf"):
        return ("is infinity, which systemd reads as no limit: the wait or timer it bounds would never end.",
                "write a finite span, %s." % SPAN_TEXT)
    if usec == 0:
        return ("is zero, which systemd reads as off: no limit for a timeout, no watchdog, a timer that fires "
                "without pause.", "write a span above zero, %s." % SPAN_TEXT)
    return None


def unit_problem(value, types=UNIT_TYPES):
    """(reason, fix) when ``value`` is not a unit name systemd accepts (of one of ``types``), else None."""
    match = _UNIT.fullmatch(value) if isinstance(value, str) else None
    if not match or len(value) > UNIT_NAME_MAX or value.startswith("-"):
        return ("is not a systemd unit name.", "write a unit name such as ssh.service or docker.socket: letters, "
                "digits and : _ . \\ - before the type (%s), never starting with a dash." % ", ".join(types))
    if match.group("type") not in types:
        return ("is a %s unit, where a %s is expected." % (match.group("type"), " or ".join(types)),
                "name a unit of type %s." % " or ".join(types))
    return None
