# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's verdict, computed once, by its last task (the doctor_report action).

The drift_report callback only observes and renders: while the doctor runs it collects what every task returned
(``findings``: the unfolded rows, what was not checked, the objects the stages declared, what the live checks read),
saves them to ``findings.json`` just before the verdict task, and after the run renders the verdict that task
returned. ``verdict`` folds the rows (``drift.dedupe``, with the fabric paths of the site's one model), counts them
and colours the picture; nothing else computes a verdict.
"""

from __future__ import annotations

import json
import os

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, topology

FINDINGS_FILE = "findings.json"


def write_findings(directory, findings):
    """Save the run's findings whole (written beside, then renamed: the verdict never reads half a file)."""
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, FINDINGS_FILE + ".tmp")
    with open(tmp, "w") as handle:
        json.dump(findings, handle, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(directory, FINDINGS_FILE))


def read_findings(directory):
    with open(os.path.join(directory, FINDINGS_FILE)) as handle:
        return json.load(handle)


def cluster(site):
    """The site's one model (topology), or None without a site or with an invalid one."""
    if not site:
        return None
    try:
        return topology.build(site)
    except topology.TopologyError:  # an invalid site: the validation's own row says why
        return None


def verdict(findings, site):
    """{rows, counts, picture} from the run's ``findings`` ({rows, checked}) and the site file as the inventory read
    it: the table's rows, one per cause; their count per severity; and what the topology picture colours
    ({nodes: {node: status}, paths: {cidr: status}}, only from checks that ran), or None without a site."""
    model = cluster(site)
    ends = {}
    if model:
        for node in model.nodes:
            for link in model.links(node.name):
                ends[(node.name, link["netdev"])] = link["cidr"]
    rows = drift.dedupe(findings.get("rows") or [], ends)
    picture = None
    if model:
        checked = findings.get("checked") or {}
        nodes = drift.node_status(rows, [n.name for n in model.nodes], set(checked.get("nodes") or []))
        paths = drift.path_status(rows, checked.get("paths") or [])
        picture = {"nodes": nodes,
                   "paths": {r["cidr"]: paths.get(r["cidr"], "unchecked") for r in model.cable_table()}}
    return {"rows": rows, "counts": drift.counts(rows), "picture": picture}
