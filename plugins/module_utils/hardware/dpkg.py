# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Installed Debian packages, as dpkg knows them: `dpkg-query -W -f '${db:Status-Status} ${Version}\\n' NAME`, and
versions compared the way the recipe's floors are written (dotted numbers)."""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable

FORMAT = "${db:Status-Status} ${Version}\\n"


def parse_query(rc, text):
    """The installed version from dpkg-query's answer, or None (not installed, or only its configuration left)."""
    if rc != 0:
        return None  # 1: no package of that name is known
    status, _, version = (text or "").strip().partition(" ")
    return (version.strip() or None) if status == "installed" else None


def installed_version(host, name):
    rc, out, err = host.run(["dpkg-query", "-W", "-f", FORMAT, name])
    if rc == 127:
        raise Unavailable("dpkg-query is not installed (not a Debian-based system)")
    return parse_query(rc, out)


def numbers(version):
    """The leading dotted numbers of a version ('26.09.2' -> (26, 9, 2); '50.0-2ubuntu0.2' -> (50, 0))."""
    match = re.match(r"\d+(?:\.\d+)*", (version or "").split(":", 1)[-1])
    return tuple(int(n) for n in match.group(0).split(".")) if match else ()


def at_least(version, floor):
    """Whether ``version`` is ``floor`` or later, comparing their dotted numbers (missing parts count as 0)."""
    have, want = numbers(version), numbers(floor)
    width = max(len(have), len(want))
    return have + (0,) * (width - len(have)) >= want + (0,) * (width - len(want))
