"""The collective check's rendering: the rendezvous, env and container come from the rank's launch spec."""

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.filter import collective as collective_filter
from ansible_collections.dgxspark.ds41f.plugins.module_utils import collective, launch

from ..serve.conftest import cluster, load_recipe
from ..serve.sglang_recipe import render_all, sglang_values

SOURCE = "print('probe')"


def rank_specs(values, shape):
    c = cluster(shape)
    recipe = launch.recipe_from_vars(values)
    shape_vars = c.groupvars()["spark_shape"]
    out = []
    for n in c.nodes:
        hv = dict(c.hostvars(n.name), spark_gid_index=c.gid_index)
        out.append(launch.render(recipe, shape_vars, launch.node_from_vars(hv, hv["spark_rank"]),
                                 {"nodes": len(c.nodes), "head_address": c.head.address}))
    return [n.name for n in c.nodes], out


@pytest.fixture
def ring():
    return rank_specs(load_recipe(), "tp4-ring")


def settings(spec, nodes, **kw):
    args = dict(backend="nccl", release="r1", image_id="sha256:aa", master_addr="", master_port=0, timeout_s=60,
                size_mib=64, iterations=5)
    args.update(kw)
    return collective.config(spec, nodes, nodes[spec["rank"]], **args)


def test_every_rank_meets_where_the_engine_will(ring):
    nodes, specs = ring
    for spec in specs:
        assert collective.rendezvous(spec) == ("192.168.1.11", 9999)
        cfg = settings(spec, nodes)
        assert (cfg["rank"], cfg["world_size"], cfg["node"]) == (spec["rank"], 4, nodes[spec["rank"]])
        assert cfg["size_bytes"] == 64 << 20


def test_overrides_win_and_sglang_dist_init_is_read(ring):
    spec = ring[1][2]
    assert collective.rendezvous(spec, "10.0.0.9", 10001) == ("10.0.0.9", 10001)
    sglang = dict(spec, command=["--dist-init-addr", "192.168.1.11:20000", "--node-rank", "2"])
    assert collective.rendezvous(sglang) == ("192.168.1.11", 20000)
    # an SGLang rank as rendered: the image's boot reads its rendezvous from the environment
    booted = render_all(sglang_values(), cluster("tp4-ring"))[2]
    assert booted["command"] == ["run"] and collective.rendezvous(booted) == ("192.168.1.11", 20000)


def test_the_container_gets_the_engines_env_file_gpus_and_mounts_with_the_checks_settings_last(ring):
    nodes, specs = ring
    spec = specs[1]
    cfg = settings(spec, nodes)
    argv = collective.docker_argv(spec, "sha256:aa", cfg, SOURCE)
    assert argv[:4] == ["docker", "run", "--rm", "--name"] and argv[4] == spec["name"] + "-collective"
    assert argv[argv.index("--gpus") + 1] == spec["gpus"] == "all"
    assert argv[argv.index("--env-file") + 1] == "/etc/ds41f/nccl.env"
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert "OMP_NUM_THREADS=8" in envs  # the recipe's env, as the engine gets it
    probe_cfg = json.loads(next(e for e in envs if e.startswith("DS41F_COLLECTIVE=")).split("=", 1)[1])
    assert probe_cfg == cfg
    assert argv.index("--env-file") < argv.index("--env")  # --env wins over the env file
    assert argv[-5:] == ["--entrypoint", "python3", "sha256:aa", "-c", SOURCE]
    for mount in spec["mounts"]:
        assert mount in argv
    assert "-d" not in argv and "--restart" not in argv


def test_the_socket_interface_override_names_the_backends_variable(ring):
    nodes, specs = ring
    lab = dict(specs[0], gpus="")
    assert collective.backend_for(lab, "auto") == "gloo" and collective.backend_for(specs[0], "auto") == "nccl"
    gloo = collective.docker_argv(lab, "img", settings(lab, nodes, backend="gloo"), SOURCE, socket_ifname="enp1s0f0np0",
                                  env={"PYTHONPATH": "/opt/site"})
    assert "GLOO_SOCKET_IFNAME=enp1s0f0np0" in gloo and "PYTHONPATH=/opt/site" in gloo and "--gpus" not in gloo
    nccl = collective.docker_argv(specs[0], "img", settings(specs[0], nodes), SOURCE, socket_ifname="eth1")
    assert "NCCL_SOCKET_IFNAME=eth1" in nccl


@pytest.mark.parametrize("kw, field", [
    ({"backend": "mpi"}, "backend"), ({"timeout_s": 2}, "timeout_s"), ({"size_mib": 0}, "size_mib"),
    ({"master_port": 70000}, "master_port"),
])
def test_bad_settings_name_the_field_and_the_fix(ring, kw, field):
    nodes, specs = ring
    with pytest.raises(collective.CollectiveError, match=field + ".*Fix"):
        settings(specs[0], nodes, **kw)


def test_nodes_out_of_rank_order_are_refused(ring):
    nodes, specs = ring
    with pytest.raises(collective.CollectiveError, match="nodes: dgx2 is rank 1, but nodes\\[1\\] is dgx3"):
        collective.config(specs[1], [nodes[0], nodes[2], nodes[1], nodes[3]], "dgx2", "nccl", "r1", "", "", 0,
                          60, 64, 5)


def test_a_spec_without_a_rendezvous_is_refused(ring):
    spec = dict(ring[1][0], command=["serve", "/models"])
    with pytest.raises(collective.CollectiveError, match="renders no rendezvous"):
        collective.rendezvous(spec)


def ok_row(rank, node, join_s=1.0, busbw=100.0):
    return {"rank": rank, "node": node, "ok": True, "join_s": join_s, "group_s": 0.1, "busbw_mbs": busbw,
            "algbw_mbs": busbw}


def test_the_verdict_is_ok_only_when_every_rank_is():
    rows = [ok_row(0, "dgx1"), ok_row(1, "dgx2", join_s=3.5), ok_row(2, "dgx3", busbw=40.0)]
    v = collective.verdict(rows)
    assert v["ok"] and "slowest join rank 1 (dgx2) 3.5 s" in v["message"]
    assert "lowest bus bandwidth rank 2 (dgx3) 40.0 MB/s" in v["message"]
    assert [r["rank"] for r in v["ranks"]] == [0, 1, 2] and len(v["lines"]) == 4
    assert not collective.verdict([])["ok"]
    assert not collective.verdict(rows[:2] + [{"rank": 2, "node": "dgx3", "ok": False}])["ok"]


def test_the_verdict_says_where_the_ranks_met():
    rows = [dict(ok_row(r, "dgx%d" % (r + 1)), rendezvous="172.30.120.11:10000") for r in range(3)]
    assert collective.verdict(rows)["message"].startswith("collective check ok: 3 ranks met at 172.30.120.11:10000;")


def test_the_verdict_names_each_cause_once_in_rank_order():
    said = "rank 2 (dgx3): interface enp1s0f0np0 is down (operstate down)"
    rows = [{"rank": r, "node": "dgx%d" % (r + 1), "ok": False, "cause": said, "ranks": [2]} for r in (3, 1, 0)]
    rows.append({"rank": 2, "node": "dgx3", "ok": False, "cause": said, "ranks": [2]})
    v = collective.verdict(rows)
    assert not v["ok"] and v["message"] == "collective check failed: " + said and v["failing_ranks"] == [2]


def test_the_filter_takes_registered_results_and_skips_hosts_without_one():
    registered = [{"collective": ok_row(1, "dgx2")}, {}, {"collective": ok_row(0, "dgx1")}]
    v = collective_filter.collective_verdict(registered)
    assert v["ok"] and [r["node"] for r in v["ranks"]] == ["dgx1", "dgx2"]


def test_the_result_line_is_found_among_other_output():
    out = "warning: x\nDS41F-COLLECTIVE {\"rank\": 1, \"ok\": true}\n"
    assert collective.parse_output(out) == {"rank": 1, "ok": True}
    assert collective.parse_output("Traceback\n") is None
    assert collective.parse_output("DS41F-COLLECTIVE {broken") is None
