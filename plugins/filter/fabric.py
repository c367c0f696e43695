# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Filters of the fabric stage: thin wrappers over the pure helpers in module_utils."""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check, lldp, nccl, transit
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain


def nccl_env(shape, hcas, gid_index, socket_ifname, common, direct, ring):
    """This node's NCCL and collective environment: ``spark_shape | nccl_env(spark_nccl_hcas, ...)``."""
    return nccl.environment(plain(shape)["fabric"], plain(hcas), plain(gid_index), socket_ifname,
                            plain(common), plain(direct), plain(ring))


def nccl_env_file(env, node, shape):
    """The env file text (docker --env-file format) of ``nccl_env``'s result."""
    return nccl.env_file(plain(env), node, plain(shape)["name"])


def fabric_transit_routes(links, cables, node):
    """Ring transit routes of one node: ``spark_links | fabric_transit_routes(spark_cables, inventory_hostname)``."""
    return transit.routes(node, plain(links), plain(cables))


def fabric_table(results):
    """Every node's fabric_check rows, merged and sorted: ``results`` is a list of fabric_check results."""
    rows = []
    for result in plain(results):
        rows.extend((result or {}).get("rows") or [])
    order = {"link": 0, "cable": 1, "path": 2, "gid": 3, "speed": 4}
    rows.sort(key=lambda r: (r["node"], r["netdev"], order.get(r["check"], 9), r.get("peer") or ""))
    return fabric_check.merge(rows)


def fabric_table_text(rows):
    """The table as text lines: counts, the rows that are not ok, and why rows were skipped."""
    return fabric_check.text(plain(rows))


def fabric_causes(rows):
    """The distinct reasons behind the failing rows (each broken end once)."""
    return fabric_check.causes(plain(rows))


def lldp_report(neighbours, cables, nodes):
    """{seen, differences, swaps} of every node's LLDP neighbours against the site's cabling."""
    seen = lldp.observed(plain(neighbours), plain(nodes))
    cables = plain(cables)
    return {
        "seen": {"%s:%d" % key: ("%s:%d" % end if end else None) for key, end in sorted(seen.items())},
        "differences": lldp.differences(cables, seen),
        "swaps": lldp.swaps(cables, seen),
    }


def lldp_suggest_site(neighbours, site, nodes):
    """The site with cables overrides as LLDP saw them, for review (``neighbours | lldp_suggest_site(site, nodes)``)."""
    return lldp.suggest_site(plain(site), lldp.observed(plain(neighbours), plain(nodes)))


class FilterModule:
    def filters(self):
        return {
            "nccl_env": nccl_env,
            "nccl_env_file": nccl_env_file,
            "fabric_transit_routes": fabric_transit_routes,
            "fabric_table": fabric_table,
            "fabric_table_text": fabric_table_text,
            "fabric_causes": fabric_causes,
            "lldp_report": lldp_report,
            "lldp_suggest_site": lldp_suggest_site,
        }
