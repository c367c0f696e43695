# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Argument checks AnsibleModule's own spec cannot express, each failing with the field and the fix.

AnsibleModule checks the type of a list of dicts but not the keys of its elements, and coerces a mode given
as a YAML integer; these checks run at the top of a module's ``main`` (or an action plugin's ``run``), before
it reads or changes anything. Every function returns a message (``field: what. Fix: how.``) or None, so action
plugins, modules and unit tests share them.
"""

from __future__ import annotations

import re
import shutil

_MODE = re.compile(r"0?[0-7]{3}|[0-7]{4}")
# The Debian/Ubuntu package that ships each binary a module runs.
PACKAGES = {"ping": "iputils-ping", "ip": "iproute2", "sysctl": "procps", "lldpctl": "lldpd",
            "ibv_devinfo": "ibverbs-utils", "docker": "docker-ce (or docker.io)", "ethtool": "ethtool"}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def mode(value, field):
    """A file mode must be a quoted octal string: YAML reads 0644 unquoted as the integer 420."""
    if isinstance(value, str) and _MODE.fullmatch(value):
        return None
    if _is_int(value):
        return ("%s: %d is an integer; YAML reads an unquoted 0%o as decimal %d, so the mode is ambiguous. Fix: quote "
                "it as an octal string, e.g. mode: \"0644\"." % (field, value, value, value)) if value >= 8 else (
                "%s: %d is an integer. Fix: quote the mode as an octal string, e.g. mode: \"0644\"." % (field, value))
    return "%s: %r is not an octal file mode. Fix: write it quoted, e.g. mode: \"0644\" or \"0755\"." % (field, value)


def elements(items, field, keys):
    """Each element of a list is a mapping holding ``keys`` ({key: type or tuple of types})."""
    if not isinstance(items, list):
        return "%s: is %s, not a list. Fix: give a list of mappings." % (field, type(items).__name__)
    for i, item in enumerate(items):
        where = "%s[%d]" % (field, i)
        if not isinstance(item, dict):
            return "%s: %r is not a mapping. Fix: give {%s}." % (where, item, ", ".join(keys))
        for key, kind in keys.items():
            if key not in item or item[key] is None:
                return "%s.%s: is missing. Fix: give every element of %s a %s (the site's spark_links carry it)." % (
                    where, key, field, key)
            value = item[key]
            if (kind is int and not _is_int(value)) or (kind is not int and not isinstance(value, kind)):
                name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
                return "%s.%s: %r is not a %s. Fix: write it as a %s." % (where, key, value, name, name)
    return None


def int_range(value, field, low, high=None):
    if not _is_int(value) or value < low or (high is not None and value > high):
        span = "from %d to %d" % (low, high) if high is not None else "of at least %d" % low
        return "%s: %r is not a whole number %s. Fix: write %s: <number %s> without quotes." % (
            field, value, span, field, span)
    return None


def gid_index(value, field="gid_index"):
    """A RoCE GID slot (0-255, an int or its digits) or 'auto'."""
    if value == "auto" or (_is_int(value) and 0 <= value <= 255):
        return None
    if isinstance(value, str) and value.isdigit() and int(value) <= 255:
        return None
    return "%s: %r is neither a GID slot (0-255) nor 'auto'. Fix: write %s: 3 or %s: auto." % (
        field, value, field, field)


def sysctl_values(settings, field):
    """sysctl values are numbers or strings; YAML's True/False would be written as 'True' and refused by the kernel."""
    for key, value in (settings or {}).items():
        if isinstance(value, bool):
            return ("%s.%s: %r is a boolean; the kernel reads numbers. Fix: write %s: %d (1 for on, 0 for off)." % (
                field, key, value, key, int(value)))
        if not isinstance(value, (int, float, str)) or (isinstance(value, str) and not value.strip()):
            return "%s.%s: %r is not a sysctl value. Fix: write a number or a string." % (field, key, value)
    return None


def binary(name, node, which=shutil.which):
    """'<name> not found on <node>: install <package>' when the binary is not on PATH."""
    if which(name):
        return None
    return "%s not found on %s: install %s." % (name, node, PACKAGES.get(name, "the package that ships %s" % name))


def doc_spec(documentation, yaml_load):
    """An argument_spec from a module's DOCUMENTATION options, for an action plugin's validate_argument_spec."""
    options = (yaml_load(documentation) or {}).get("options") or {}
    keys = ("type", "elements", "required", "default", "choices")
    return {name: {k: v for k, v in option.items() if k in keys} for name, option in options.items()}


def fail_on(module, *messages):
    """``module.fail_json`` with the first message that is not None."""
    for message in messages:
        if message:
            module.fail_json(msg=message)
