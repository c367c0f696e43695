"""sparknet's environment in every rank's launch spec, against sparknet's documented contract.

The contract (christopherowen/dgx-spark-networking, README "Environment", and its render tests): the topology is
``direct`` for a clique (triangle, switch) and ``ring4`` for the four-node ring; ``SPARKNET_ROCE_PEER_HCAS`` is
JSON ``{peer rank: [local HCAs in stripe order]}`` naming only the two neighbours on ring4 and every peer on a
direct clique, with stripe i of both ends on the same cable path; a clique over a switch names its rails in
``SPARKNET_ROCE_HCA`` instead (at most two); ``SPARKNET_ROCE_GID_INDEX`` is the IPv4 RoCE v2 slot.
"""

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, sparknet, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe as recipe_checks

from .conftest import cluster
from .test_launch import node_vars, specs

# The sizes the seeds give: seed 000 "one-shot RoCE all-reduce (up to 2 MiB) ... SPARKNET_ROCE_TIMEOUT_MS=10000";
# ../shared/research/deployments-in-the-field.md section 3.5, row "One-shot (sparknet)": all-gather 4 MiB on the
# triangle and switched profiles, dispatch 1 MiB and all-gather 2 MiB on the ring, spin limit 5,000,000.
SIZES = {
    "oneshot-direct": {"SPARKNET_ROCE_ALLREDUCE_CAPACITY_BYTES": "2097152",
                       "SPARKNET_ROCE_ALLGATHER_MAX_BYTES": "4194304"},
    "oneshot-switched": {"SPARKNET_ROCE_ALLREDUCE_CAPACITY_BYTES": "2097152",
                         "SPARKNET_ROCE_ALLGATHER_MAX_BYTES": "4194304"},
    "oneshot-ring4": {"SPARKNET_ROCE_ALLREDUCE_CAPACITY_BYTES": "2097152",
                      "SPARKNET_ROCE_ALLREDUCE_DISPATCH_MAX_BYTES": "1048576",
                      "SPARKNET_ROCE_ALLGATHER_MAX_BYTES": "2097152"},
}
EVERY_SHAPE = sorted(topology.SHAPES)


def stripe_peer(c, name, hca):
    """The HCA at the other end of this node's path through ``hca`` (the same stripe on the peer)."""
    link = next(link for link in c.links(name) if link["hca"] == hca)
    return link["peer"], link["peer_hca"]


@pytest.mark.parametrize("shape", EVERY_SHAPE)
def test_every_rank_renders_the_contract_of_its_transport(recipe, shape):
    c = cluster(shape)
    transport = topology.SHAPES[shape].transport
    for node, spec in zip(c.nodes, specs(recipe, shape), strict=True):
        env = spec["env"]
        assert env["SPARKNET_ROCE_GID_INDEX"] == "3"
        for key, value in SIZES[transport].items():
            assert env[key] == value, (shape, node.name, key)
        assert env["SPARKNET_ROCE_TIMEOUT_MS"] == "10000" and env["SPARKNET_ROCE_SPIN_LIMIT"] == "5000000"
        hcas = c.nccl_hcas(node.name)
        if transport == "oneshot-switched":
            assert env["SPARKNET_ROCE_TOPOLOGY"] == "direct"
            assert "SPARKNET_ROCE_PEER_HCAS" not in env
            rails = env["SPARKNET_ROCE_HCA"].split(",")
            assert rails == ["rocep1s0f0", "roceP2p1s0f0"] and set(rails) <= set(hcas)
            continue
        assert "SPARKNET_ROCE_HCA" not in env
        peers = json.loads(env["SPARKNET_ROCE_PEER_HCAS"])
        n = len(c.nodes)
        if transport == "oneshot-ring4":
            assert env["SPARKNET_ROCE_TOPOLOGY"] == "ring4"
            assert set(peers) == {str((node.rank - 1) % n), str((node.rank + 1) % n)}  # neighbours only
        else:
            assert env["SPARKNET_ROCE_TOPOLOGY"] == "direct"
            assert set(peers) == {str(r) for r in range(n) if r != node.rank}  # every peer of the clique
        for peer_rank, lanes in peers.items():
            assert 1 <= len(lanes) <= 2 and len(set(lanes)) == len(lanes) and set(lanes) <= set(hcas)
            peer = c.nodes[int(peer_rank)]
            theirs = json.loads(specs_env(recipe, shape, peer.name)["SPARKNET_ROCE_PEER_HCAS"])[str(node.rank)]
            # stripe i on both ends is one cable path
            assert [stripe_peer(c, node.name, h) for h in lanes] == [(peer.name, h) for h in theirs]


def specs_env(recipe, shape, name):
    c = cluster(shape)
    return specs(recipe, shape)[c.node(name).rank]["env"]


def test_ring_ranks_in_the_seeds_cabling_list_their_two_neighbours(recipe):
    env = [s["env"] for s in specs(recipe, "tp4-ring")]
    # port 0 of each rank is cabled to port 1 of the next: the next rank through port 0's two PCIe paths
    assert json.loads(env[0]["SPARKNET_ROCE_PEER_HCAS"]) == {"1": ["rocep1s0f0", "roceP2p1s0f0"],
                                                             "3": ["rocep1s0f1", "roceP2p1s0f1"]}
    assert json.loads(env[2]["SPARKNET_ROCE_PEER_HCAS"]) == {"1": ["rocep1s0f1", "roceP2p1s0f1"],
                                                             "3": ["rocep1s0f0", "roceP2p1s0f0"]}


def test_gid_auto_leaves_the_slot_to_the_fabric():
    c = topology.build({"shape": "tp3-triangle", "gid_index": "auto",
                        "nodes": [{"name": "dgx%d" % i, "address": "192.168.1.1%d" % i} for i in (1, 2, 3)]})
    node = node_vars(c, "dgx1")
    assert node["gid_index"] == "auto"
    env = sparknet.environment("oneshot-direct", 0, 3, node["peer_hcas"], node["hcas"], node["gid_index"], {})
    assert "SPARKNET_ROCE_GID_INDEX" not in env and env["SPARKNET_ROCE_TOPOLOGY"] == "direct"


def test_an_nccl_only_transport_gets_no_sparknet_env():
    assert sparknet.environment("nccl-ring", 0, 4, {1: ["a"]}, ["a"], 3, {"common": {"X": 1}}) == {}


@pytest.mark.parametrize("key,value", [("SPARKNET_ROCE_TOPOLOGY", "direct"),
                                       ("SPARKNET_ROCE_PEER_HCAS", '{"2":["rocep1s0f0"]}'),
                                       ("SPARKNET_ROCE_HCA", "rocep1s0f0"),
                                       ("SPARKNET_ROCE_GID_INDEX", "4")])
def test_a_serve_env_that_sets_the_routing_is_refused_at_render_and_validation(recipe, key, value):
    bad = dict(recipe, serve_env=dict(recipe["serve_env"], **{key: value}))
    with pytest.raises(launch.LaunchError, match=r"serve_env\.%s: .*Fix: remove it" % key):
        specs(bad, "tp4-ring")
    found = [str(p) for p in recipe_checks.cross_checks(cluster("tp4-ring"), bad)]
    assert any(p.startswith("serve_env.%s:" % key) and "Fix: remove it" in p for p in found), found


def test_a_sparknet_size_in_serve_env_or_an_unknown_transport_is_refused(recipe):
    bad = dict(recipe, serve_env=dict(recipe["serve_env"], SPARKNET_ROCE_ALLGATHER_MAX_BYTES="1"))
    with pytest.raises(launch.LaunchError, match=r"serve_env\.SPARKNET_ROCE_ALLGATHER_MAX_BYTES: .*serve_sparknet_env"):
        specs(bad, "tp3-triangle")
    bad = dict(recipe, serve_sparknet_env=dict(recipe["serve_sparknet_env"], **{"oneshot-ring": {}}))
    with pytest.raises(launch.LaunchError, match=r"serve_sparknet_env\.oneshot-ring: is not a sparknet transport"):
        specs(bad, "tp4-ring")


def test_a_dispatch_ceiling_above_the_capacity_is_refused(recipe):
    ring = dict(recipe["serve_sparknet_env"]["oneshot-ring4"], SPARKNET_ROCE_ALLREDUCE_DISPATCH_MAX_BYTES=4194304)
    bad = dict(recipe, serve_sparknet_env=dict(recipe["serve_sparknet_env"], **{"oneshot-ring4": ring}))
    with pytest.raises(launch.LaunchError, match="DISPATCH_MAX_BYTES: is 4194304, above the registered capacity"):
        specs(bad, "tp4-ring")
    specs(bad, "tp3-triangle")  # the triangle does not dispatch through the ring's ceiling


@pytest.mark.parametrize("shape,key,value,words", [
    ("tp4-ring", "NCCL_ALGO", "Tree", "the switchless ring (oneshot-ring4) needs NCCL_ALGO=Ring"),
    ("tp3-triangle", "NCCL_ALGO", "Ring", "is a switchless-ring setting; this shape's transport is oneshot-direct"),
    ("tp8-switched", "NCCL_IB_HCA", "=rocep1s0f0", "is derived from the site's topology"),
    ("tp3-triangle", "NCCL_BUFFSIZE", "4194304", "the fabric profile sets 1048576"),
])
def test_a_serve_env_that_contradicts_the_fabric_transport_is_refused(recipe, shape, key, value, words):
    bad = dict(recipe, serve_env=dict(recipe["serve_env"], **{key: value}))
    found = [str(p) for p in recipe_checks.cross_checks(cluster(shape), bad)]
    assert any(p.startswith("serve_env.%s:" % key) and words in p and "Fix:" in p for p in found), found
    assert not recipe_checks.cross_checks(cluster(shape), recipe)  # the shipped recipe is clean on every shape


def test_the_fabric_profiles_may_not_carry_sparknet_settings(recipe):
    bad = dict(recipe, fabric_nccl_env_common=dict(recipe["fabric_nccl_env_common"], SPARKNET_ROCE_SPIN_LIMIT=1))
    found = [str(p) for p in recipe_checks.cross_checks(cluster("tp3-triangle"), bad)]
    assert any(p.startswith("fabric_nccl_env_common.SPARKNET_ROCE_SPIN_LIMIT:") and "serve_sparknet_env" in p
               for p in found), found


def test_a_ring_rank_that_reaches_a_rank_two_apart_is_refused():
    with pytest.raises(sparknet.SparknetError, match=r"rank 0 reaches ranks \[1, 2, 3\], but oneshot-ring4 needs"):
        sparknet.routes("oneshot-ring4", 0, 4, {1: ["a"], 2: ["b"], 3: ["c"]}, ["a", "b", "c"])
    with pytest.raises(sparknet.SparknetError, match="is not one or two distinct HCAs"):
        sparknet.routes("oneshot-direct", 0, 3, {1: ["a", "a"], 2: ["b"]}, ["a", "b"])
