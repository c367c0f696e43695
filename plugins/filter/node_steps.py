# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Filters over node_steps results (docs: plugins/filter/<name>.yml)."""

from __future__ import annotations


def _differs(result):
    """True when a node_steps result (an audit in check mode) found something to do or something wrong."""
    if not isinstance(result, dict):
        return True  # no audit of this node: nothing says it is as it should be
    if result.get("changed"):
        return True
    for step in result.get("results") or []:
        if step.get("changed") or step.get("failed") or step.get("drift") or step.get("failing"):
            return True
    return False


def steps_differ(hosts, hostvars, name):
    """True when the audit registered as ``name`` (one node_steps result per node) found a difference or a
    failure on any of ``hosts``."""
    return any(_differs(hostvars[host].get(name)) for host in hosts)


class FilterModule:
    def filters(self):
        return {"steps_differ": steps_differ}
