"""The NCCL environment of a node from the recipe and the topology, and the recipe problems caught before any change."""

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import nccl, recipe
from tests.conftest import ROOT

RECIPE = yaml.safe_load((ROOT / "group_vars" / "all" / "fabric.yml").read_text())


def env_of(cluster, node, gid_index=3):
    return nccl.environment(cluster.shape.fabric, cluster.nccl_hcas(node), gid_index, "enP7s7",
                            RECIPE["fabric_nccl_env_common"], RECIPE["fabric_nccl_env_direct"],
                            RECIPE["fabric_nccl_env_ring"])


def test_the_hca_list_comes_from_this_nodes_cables_and_matches_names_exactly(triangle, switched):
    assert env_of(triangle, "dgx1")["NCCL_IB_HCA"] == "=rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1"
    assert env_of(switched, "dgx5")["NCCL_IB_HCA"] == "=rocep1s0f0,roceP2p1s0f0"  # port 0 on the switch


def test_ring_settings_only_on_the_ring(triangle, ring):
    tri, rng = env_of(triangle, "dgx2"), env_of(ring, "dgx2")
    assert rng["NCCL_ALGO"] == "Ring" and rng["NCCL_IB_SUBNET_PREFIX_LEN"] == "24" and rng["NCCL_CUMEM_ENABLE"] == "1"
    assert rng["NCCL_BUFFSIZE"] == "4194304" and rng["NCCL_MAX_NCHANNELS"] == "4"
    assert "NCCL_ALGO" not in tri and tri["NCCL_CUMEM_ENABLE"] == "0" and tri["NCCL_BUFFSIZE"] == "1048576"
    assert tri["NCCL_PROTO"] == rng["NCCL_PROTO"] == "^LL128"


def test_gid_slot_and_socket_netdev_from_the_site(triangle):
    env = env_of(triangle, "dgx1")
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "enP7s7"
    auto = env_of(triangle, "dgx1", gid_index="auto")
    assert "NCCL_IB_GID_INDEX" not in auto
    # sparknet's variables are the launch spec's (tests/unit/serve/test_sparknet.py), never the NCCL env file's
    assert not [k for k in env if k.startswith("SPARKNET_")]


def test_the_env_file_is_docker_env_file_text_sorted_and_unquoted(ring):
    text = nccl.env_file(env_of(ring, "dgx1"), "dgx1", "tp4-ring")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == sorted(lines)
    assert "NCCL_THREAD_THRESHOLDS=-2 -2 -2 1 1 1" in lines  # docker takes values literally: no quotes
    assert all("=" in line for line in lines)


def values(**override):
    return dict(RECIPE, **override)


def test_the_shipped_recipe_has_no_problem_on_any_shape(triangle, ring, switched):
    for cluster in (triangle, ring, switched):
        assert nccl.problems(cluster.shape.fabric, values()) == []


def test_a_patched_only_control_without_its_patch_is_refused(ring):
    problems = nccl.problems("ring", values(fabric_nccl_patches=["ib-cts-acquire-fence"]))
    text = [str(p) for p in problems]
    assert text == [
        "NCCL_MIN_TRAFFIC_PER_CHANNEL: is set, but the NCCL in the image lacks balanced-channel-allocation "
        "(fabric_nccl_patches), so NCCL would ignore it without a word. Fix: add balanced-channel-allocation to "
        "fabric_nccl_patches if the image's NCCL carries it, or remove NCCL_MIN_TRAFFIC_PER_CHANNEL from the recipe.",
        "NCCL_SWITCHLESS_BIDIRECTIONAL: is set, but the NCCL in the image lacks bidirectional-switchless-rings, "
        "balanced-channel-allocation (fabric_nccl_patches), so NCCL would ignore it without a word. Fix: add "
        "bidirectional-switchless-rings, balanced-channel-allocation to fabric_nccl_patches if the image's NCCL "
        "carries it, or remove NCCL_SWITCHLESS_BIDIRECTIONAL from the recipe."]
    # a 0 means "off", which an unpatched NCCL also does: not flagged
    ring_off = dict(RECIPE["fabric_nccl_env_ring"], NCCL_SWITCHLESS_BIDIRECTIONAL=0, NCCL_MIN_TRAFFIC_PER_CHANNEL=0)
    assert nccl.problems("ring", values(fabric_nccl_patches=[], fabric_nccl_env_ring=ring_off)) == []


def test_the_ring_needs_its_settings_and_other_shapes_refuse_them():
    ring = {k: v for k, v in RECIPE["fabric_nccl_env_ring"].items() if k != "NCCL_ALGO"}
    assert [p.field for p in nccl.problems("ring", values(fabric_nccl_env_ring=ring))] == [
        "fabric_nccl_env_ring.NCCL_ALGO"]
    direct = dict(RECIPE["fabric_nccl_env_direct"], NCCL_ALGO="Ring")
    assert [p.field for p in nccl.problems("triangle", values(fabric_nccl_env_direct=direct))] == [
        "fabric_nccl_env_direct.NCCL_ALGO"]


def test_keys_the_topology_owns_are_refused_in_the_recipe():
    common = dict(RECIPE["fabric_nccl_env_common"], NCCL_IB_HCA="mlx5_0", NCCL_DEBUG={"a": 1})
    fields = [p.field for p in nccl.problems("switched", values(fabric_nccl_env_common=common))]
    assert sorted(fields) == ["fabric_nccl_env_common.NCCL_DEBUG", "fabric_nccl_env_common.NCCL_IB_HCA"]


def test_the_validation_play_sees_these_problems(ring):
    problems = recipe.cross_checks(ring, values(fabric_nccl_patches=[]))
    assert {p.field for p in problems} == {"NCCL_SWITCHLESS_BIDIRECTIONAL", "NCCL_MIN_TRAFFIC_PER_CHANNEL"}
