# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""sparknet's one-shot collectives: the environment one rank needs, from its shape's transport and its cables.

sparknet (christopherowen/dgx-spark-networking, README "Environment") reads its routing from four variables:

- ``SPARKNET_ROCE_TOPOLOGY``: ``direct`` (a clique: the triangle, or every node on a switch), ``ring4`` (four
  nodes in a switchless ring) or ``mesh4``;
- ``SPARKNET_ROCE_PEER_HCAS``: JSON ``{peer rank: [local HCAs in stripe order]}`` for switchless fabrics; on
  ``ring4`` it names the two neighbours only, since no cable joins ranks two apart;
- ``SPARKNET_ROCE_HCA``: the HCA list of a clique over a switch (the same rails reach every peer);
- ``SPARKNET_ROCE_GID_INDEX``: the IPv4 RoCE v2 GID slot.

These come from the one topology model (``spark_peer_hcas``, ``spark_nccl_hcas``, ``spark_gid_index``) and
are never typed in a recipe; the collective sizes (all-reduce capacity, dispatch and all-gather ceilings, spin
limit, timeout) come from ``serve_sparknet_env``, per transport. Pure Python: controller, modules and tests.
"""

from __future__ import annotations

import json

# Shape transport -> sparknet topology. A clique over a switch is `direct` with one HCA list (SPARKNET_ROCE_HCA).
TOPOLOGY = {
    "oneshot-direct": "direct",
    "oneshot-ring4": "ring4",
    "oneshot-mesh4": "mesh4",
    "oneshot-switched": "direct",
}
SWITCHED = ("oneshot-switched",)
RING_NODES = 4  # ring4 and mesh4 are defined for exactly four ranks
MAX_RAILS = 2  # sparknet stripes over at most two rails per peer (one port's two PCIe functions)
# Variables the topology owns: a recipe that sets them is refused.
DERIVED = ("SPARKNET_ROCE_TOPOLOGY", "SPARKNET_ROCE_PEER_HCAS", "SPARKNET_ROCE_HCA", "SPARKNET_ROCE_GID_INDEX")
SIZE_KEYS = ("SPARKNET_ROCE_ALLREDUCE_CAPACITY_BYTES", "SPARKNET_ROCE_ALLREDUCE_DISPATCH_MAX_BYTES",
             "SPARKNET_ROCE_ALLGATHER_MAX_BYTES")


class SparknetError(ValueError):
    """The topology cannot give sparknet a consistent route; the message names the field and the fix."""


def topology(transport):
    return TOPOLOGY.get(transport)


def neighbours(rank, nodes):
    return {(rank - 1) % nodes, (rank + 1) % nodes}


def routes(transport, rank, nodes, peer_hcas, hcas):
    """The routing variables of one rank (without the GID slot)."""
    kind = topology(transport)
    if kind is None:
        return {}  # an NCCL-only transport: sparknet is not constructed
    if transport in SWITCHED:
        # The rails a switch clique stripes over: the first two of this node's HCAs in (port, path) order.
        if not hcas:
            raise SparknetError("spark_nccl_hcas: is not set for rank %d on a switched shape. Fix: run against an "
                                "inventory from the dgxspark.ds41f.spark_topology plugin." % rank)
        return {"SPARKNET_ROCE_TOPOLOGY": kind, "SPARKNET_ROCE_HCA": ",".join(list(hcas)[:MAX_RAILS])}
    if peer_hcas is None:
        raise SparknetError("spark_peer_hcas: is not set for rank %d. Fix: run against an inventory from the "
                            "dgxspark.ds41f.spark_topology plugin (a *.spark.yml site file)." % rank)
    peers = {int(k): list(v) for k, v in peer_hcas.items()}
    want = neighbours(rank, nodes) if kind in ("ring4", "mesh4") else set(range(nodes)) - {rank}
    if kind in ("ring4", "mesh4") and nodes != RING_NODES:
        raise SparknetError("%s: sparknet's %s needs exactly %d ranks, the shape has %d. Fix: pick the shape for "
                            "this cabling." % (transport, kind, RING_NODES, nodes))
    if set(peers) != want:
        raise SparknetError("spark_peer_hcas: rank %d reaches ranks %s, but %s needs %s. Fix: cable the nodes as "
                            "the shape says (each node's neighbours at rank +-1)." % (
                                rank, sorted(peers), transport, sorted(want)))
    for peer, lanes in sorted(peers.items()):
        if not lanes or len(lanes) > MAX_RAILS or len(set(lanes)) != len(lanes):
            raise SparknetError("spark_peer_hcas.%d: %s is not one or two distinct HCAs. Fix: one cable per peer, "
                                "both PCIe paths addressed." % (peer, lanes))
    text = json.dumps({str(p): peers[p] for p in sorted(peers)}, separators=(",", ":"))
    return {"SPARKNET_ROCE_TOPOLOGY": kind, "SPARKNET_ROCE_PEER_HCAS": text}


def sizes(transport, profiles):
    """The collective sizes of a transport: ``profiles`` is serve_sparknet_env ({common, <transport>})."""
    if topology(transport) is None:
        return {}
    profiles = profiles or {}
    out = {k: str(v) for k, v in (profiles.get("common") or {}).items()}
    out.update({k: str(v) for k, v in (profiles.get(transport) or {}).items()})
    return out


def environment(transport, rank, nodes, peer_hcas, hcas, gid_index, profiles):
    """Everything sparknet reads on one rank, as {name: text}, sorted by name."""
    env = sizes(transport, profiles)
    env.update(routes(transport, rank, nodes, peer_hcas, hcas))
    if env and isinstance(gid_index, int) and not isinstance(gid_index, bool):
        env["SPARKNET_ROCE_GID_INDEX"] = str(gid_index)
    # gid_index 'auto': left out, as NCCL_IB_GID_INDEX is (sparknet then falls back to NCCL's, then slot 3).
    return dict(sorted(env.items()))


def problems(transport, profiles, serve_env):
    """[(field, message, fix)] where the recipe contradicts the transport (checked before any host is touched)."""
    out = []
    for key in sorted(serve_env or {}):
        if key in DERIVED:
            out.append(("serve_env.%s" % key, "is derived per node from the site's topology and the shape's "
                        "transport (%s)." % transport,
                        "remove it; change the site file (shape, cables, gid_index) instead."))
        elif key.startswith("SPARKNET_ROCE_"):
            out.append(("serve_env.%s" % key, "is a sparknet collective setting.",
                        "set it per transport in serve_sparknet_env instead."))
    profiles = profiles or {}
    for name, data in sorted(profiles.items()):
        if name != "common" and name not in TOPOLOGY:
            out.append(("serve_sparknet_env.%s" % name, "is not a sparknet transport.",
                        "use common or one of: %s." % ", ".join(sorted(TOPOLOGY))))
            continue
        for key in sorted(data or {}):
            if key in DERIVED:
                out.append(("serve_sparknet_env.%s.%s" % (name, key), "is derived per node from the topology.",
                            "remove it."))
            elif not key.startswith("SPARKNET_ROCE_"):
                out.append(("serve_sparknet_env.%s.%s" % (name, key), "is not a sparknet variable.",
                            "move it to serve_env."))
    env = sizes(transport, profiles)
    for key in SIZE_KEYS:
        if key in env and not env[key].isdigit():
            out.append(("serve_sparknet_env.%s" % key, "is %r, not a byte count." % env[key], "write bytes."))
    capacity, dispatch = (env.get(k) for k in SIZE_KEYS[:2])
    if capacity and dispatch and capacity.isdigit() and dispatch.isdigit() and int(dispatch) > int(capacity):
        out.append(("serve_sparknet_env.%s.SPARKNET_ROCE_ALLREDUCE_DISPATCH_MAX_BYTES" % transport,
                    "is %s, above the registered capacity %s; sparknet dispatches at most its capacity." % (
                        dispatch, capacity),
                    "lower it to at most SPARKNET_ROCE_ALLREDUCE_CAPACITY_BYTES."))
    return out
