# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Filters over module_utils/fanout.py: who sends the checkpoint or the image to whom, and over what."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgxspark.ds41f.plugins.module_utils import fanout
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain


def fanout_plan(spark_nodes, spark_cables, state, origin=None, width=3, want=True):
    """{child: {name (its parent), wave, addresses, management_address}} for every node not complete.

    ``state``: {node: value}; a node is complete when its value is ``want`` (true for "holds a verified
    checkpoint", the built image ID for images). ``origin``: the node the stage mends from outside the
    cluster first (controller copy, hub download, the build), counted as a holder.
    """
    nodes = plain(spark_nodes)
    state, want = plain(state), plain(want)
    have = {n for n, v in state.items() if v == want} | ({origin} if origin else set())
    need = {n for n, v in state.items() if v != want} - have
    try:
        return fanout.endpoints([n["name"] for n in nodes], plain(spark_cables),
                                {n["name"]: n["address"] for n in nodes}, have, need, int(width))
    except ValueError as exc:
        raise AnsibleFilterError("fan-out: %s. Fix: mend one node first (the source, or the build node), "
                                 "or check the cabling the site file describes." % exc) from exc


def fanout_children(plan, node):
    """The children ``node`` sends to under ``plan``."""
    return fanout.children(plain(plan), node)


def fanout_listen(plan, node, management_address, allow_management=True):
    """The local addresses ``node``'s share serves on: its fabric ends towards its children (+ management)."""
    addresses = []
    for child in fanout.children(plain(plan), node):
        for address in plan[child]["addresses"]:
            if address not in addresses:
                addresses.append(address)
    if allow_management:
        addresses.append(management_address)
    return addresses


class FilterModule:
    def filters(self):
        return {"fanout_plan": fanout_plan, "fanout_children": fanout_children, "fanout_listen": fanout_listen}
