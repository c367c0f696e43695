# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Turn loader output (tagged or wrapped YAML types) into plain Python, so the pure models see plain data."""

from __future__ import annotations


def plain(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def host_fact(host_vars, name):
    """A fact a module returned for one host, read from its ansible_facts: with INJECT_FACTS_AS_VARS off (ansible-core's
    default from 2.24, and this project's ansible.cfg) facts are not top-level variables."""
    return plain((host_vars.get("ansible_facts") or {}).get(name))
