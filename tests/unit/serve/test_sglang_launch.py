"""The SGLang engine (plugins/module_utils/engines/sglang.py): every rank of seed 001's TP4 profile, its rules."""

import re

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.filter import serve as serve_filters
from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch

from .conftest import ROOT, cluster, load_recipe
from .sglang_recipe import render_all, seed_text, sglang_values
from .test_launch import flag


@pytest.fixture
def values():
    return sglang_values()


def test_every_rank_runs_the_images_boot_with_its_own_settings(values):
    c = cluster("tp4-ring")
    specs = render_all(values, c)
    assert len(specs) == 4
    for rank, spec in enumerate(specs):
        env = spec["env"]
        assert spec["engine"] == "sglang" and spec["image"] == "dsv41-4x-spark:canary-roce"
        # the image's own boot (its ENTRYPOINT) with the launcher's `run`; no override
        assert spec["entrypoint"] == [] and spec["image_entrypoint"] == ["python3", "-u", "/opt/dsv41/boot.py"]
        assert spec["command"] == ["run"]
        assert env["MODEL_PATH"] == env["DSV41_SOURCE"] == values["model_container_path"]
        assert env["TP_SIZE"] == env["NNODES"] == "4" and env["NODE_RANK"] == str(rank)
        assert env["DIST_INIT_ADDR"] == "192.168.1.11:20000"
        # the API on 8888 is the head's proxy; the engine itself listens on loopback only
        assert spec["port"] == 8888 and env["HOST"] == "127.0.0.1"
        assert env["SERVER_PORT"] == str(values["serve_engine_port"]) != "8888"
        assert env["CONTEXT_LENGTH"] == "1048576"
        assert env["MAX_RUNNING_REQUESTS"] == env["CUDA_GRAPH_MAX_BS_DECODE"] == "16"
        assert env["CHUNKED_PREFILL_SIZE"] == "8192" and env["MEM_FRACTION_STATIC"] == "0.78"
        address = c.nodes[rank].address
        assert env["HOST_IP"] == env["VLLM_HOST_IP"] == address
        # what the boot builds from them, for SGLang's parser
        argv = spec["command"].server_argv
        assert flag(argv, "--node-rank") == str(rank) and flag(argv, "--tp-size") == "4"
        assert flag(argv, "--chunked-prefill-size") == "8192" and "--sleep-on-idle" in argv
        # RoCEnante's rails from this node's topology; sparknet is vLLM's and absent here
        assert env["B12X_ROCE_HCA"] == ",".join(c.hostvars(c.nodes[rank].name)["spark_nccl_hcas"])
        assert not [k for k in env if k.startswith("SPARKNET_")]
        assert env["DSV41_MOE_B12X_NEXT"] == "1" and env["SGLANG_RUST_BUILD_MODE"] == "never"
        assert env["SKIP_SMOKE"] == "1" and ("WARMUP" in env) == (rank == 0)
        assert spec["cpuset"] == ""  # the vLLM-qualified tp4-ring cpuset does not carry over
        assert spec["privileged"] is True
    assert len({s["labels"]["ds41f.recipe"] for s in specs}) == 1
    assert len({s["labels"]["ds41f.spec"] for s in specs}) == 4


def test_the_container_policy_is_the_launchers(values):
    """start.sh's docker run (tests/fixtures/release/sglang-tp4-ring.yml): privileged, host network and IPC, no
    restart, the RDMA devices, memlock unlimited and the stack's soft limit, 32 GiB of shared memory, no memory cap."""
    argv = launch.docker_run(render_all(values, cluster("tp4-ring"))[1])
    pairs = list(zip(argv[:-1], argv[1:], strict=True))
    assert "--privileged" in argv and ("--restart", "no") in pairs
    assert ("--network", "host") in pairs and ("--ipc", "host") in pairs and ("--shm-size", "32g") in pairs
    assert [v for k, v in pairs if k == "--ulimit"] == ["memlock=-1:-1", "stack=67108864"]
    assert ("--device", "/dev/infiniband:/dev/infiniband") in pairs
    assert "--memory" not in argv and "--security-opt" not in argv
    assert argv[argv.index("dsv41-4x-spark:canary-roce") + 1:] == ["run"]


def test_the_filter_renders_the_same_spec(values):
    c = cluster("tp4-ring")
    name = c.nodes[2].name
    hv = dict(values, **c.hostvars(name), spark_gid_index=c.gid_index, spark_nodes=c.groupvars()["spark_nodes"])
    spec = serve_filters.launch_spec(hv, c.groupvars()["spark_shape"], 2, 4, c.head.address)
    assert spec == render_all(values, c)[2]
    assert "DIST_INIT_ADDR=192.168.1.11:20000" in serve_filters.docker_command(spec)


def test_an_explicit_vllm_engine_leaves_the_vllm_spec_byte_identical(recipe):
    c = cluster("tp4-ring")
    assert render_all(dict(recipe, serve_engine="vllm"), c) == render_all(recipe, c)
    assert "engine" not in render_all(recipe, c)[0]


# The recorded launch (tests/fixtures/release/SOURCE.md) and seed 001's v2.4 changes to it: the launcher's
# settings and flags are sources as the seed is.
RECORD = ROOT / "tests" / "fixtures" / "release" / "sglang-tp4-ring.yml"


def recorded_words():
    record = yaml.safe_load(RECORD.read_text())
    return " ".join(record["head"]["docker"] + record["workers"]["docker"])


def every_env_and_flag_comes_from_a_source(values):
    """What the recipe sets that neither seed 001 nor the recorded launcher says."""
    text = seed_text() + "\n" + recorded_words()
    missing = [k for k, v in values["serve_sglang_env"].items() if "%s=%s" % (k, v) not in text]
    args = values["serve_sglang_args"]
    for i, arg in enumerate(args):
        if arg.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            if "%s %s" % (arg, args[i + 1]) not in text:
                missing.append("%s %s" % (arg, args[i + 1]))
        elif arg.startswith("--") and arg not in text:
            missing.append(arg)
    return missing


def test_every_env_value_and_flag_is_written_in_seed_001_or_the_launcher(values):
    assert every_env_and_flag_comes_from_a_source(values) == []
    assert "8888 (API), 20000 (torch distributed init)" in seed_text()
    assert "nvidia-smi -lgc %s" % values["serve_sglang_clock_cap_lgc"] in seed_text()


def test_the_boot_markers_match_the_seed_lines_and_miss_a_dropped_one(values):
    markers = values["serve_sglang_boot_markers"]
    text = seed_text()
    assert serve_filters.boot_markers_missing(text, markers["required"]) == []
    assert serve_filters.boot_fallbacks(text, markers["fallback"], markers["kernel_families"]) == []
    without = "\n".join(line for line in text.splitlines() if not line.startswith("RoCEnante ready"))
    assert serve_filters.boot_markers_missing(without, markers["required"]) == ["RoCEnante ready: world=4 hcas="]


def with_env(values, **settings):
    env = dict(values["serve_env"])
    for name, value in settings.items():
        if value is None:
            del env[name]
        else:
            env[name] = value
    return dict(values, serve_env=env)


@pytest.mark.parametrize(("settings", "words"), [
    ({"CHUNKED_PREFILL_SIZE": "16384"}, r"CHUNKED_PREFILL_SIZE: 16384 is above 8192 .*never to raise the chunk"),
    ({"MEM_FRACTION_STATIC": "0.80"}, r"MEM_FRACTION_STATIC: 0.80 is above 0.78.*Fix: lower it to 0.78"),
    ({"CHUNKED_PREFILL_SIZE": None}, r"serve_env.CHUNKED_PREFILL_SIZE: is not set"),
    ({"MEM_FRACTION_STATIC": "lots"}, r"are not a token count and a fraction"),
])
def test_the_1m_memory_rules_of_seed_001_refuse(values, settings, words):
    with pytest.raises(launch.LaunchError, match=words):
        render_all(with_env(values, **settings), cluster("tp4-ring"))


def test_4096_chunks_may_take_the_upstream_fraction_and_short_contexts_are_not_judged(values):
    ok = with_env(values, CHUNKED_PREFILL_SIZE="4096", MEM_FRACTION_STATIC="0.80")
    assert render_all(ok, cluster("tp4-ring"))[0]["env"]["MEM_FRACTION_STATIC"] == "0.80"
    # the seed measured 1M only: a 256k shape is not held to its rules
    short = with_env(values, CHUNKED_PREFILL_SIZE="16384")
    assert render_all(short, cluster("tp3-triangle-4k"))[0]["env"]["CONTEXT_LENGTH"] == "262144"


@pytest.mark.parametrize(("change", "words"), [
    ({"serve_args": ["--tp-size", "4"]}, r"serve_args\[0\]: --tp-size is rendered"),
    ({"serve_args": ["--dist-init-addr=10.0.0.1:1"]}, r"--dist-init-addr is rendered"),
    ({"serve_args": ["--chunked-prefill-size", "4096"]}, r"--chunked-prefill-size is rendered"),
    ({"serve_args": ["--enable-decoder-swa-bounded-replay"]}, r"--enable-decoder-swa-bounded-replay is rendered"),
    ({"serve_env": {"NODE_RANK": "0"}}, r"serve_env.NODE_RANK: is rendered per rank"),
    ({"serve_speculative": {"method": "dspark"}}, r"serve_speculative: is a vLLM setting"),
    ({"serve_kv_cache_bytes": 1 << 30}, r"serve_kv_cache_bytes: is a vLLM setting"),
    ({"serve_served_names": ["a", "b"]}, r"serve_served_names: SGLang serves one model name, the recipe lists 2"),
    ({"serve_engine": "trtllm"}, r"serve_engine: 'trtllm' is not an engine.*sglang, vllm"),
])
def test_what_the_sglang_engine_refuses(values, change, words):
    with pytest.raises(launch.LaunchError, match=words):
        render_all(dict(values, **change), cluster("tp4-ring"))


def test_the_derived_hca_list_is_refused_in_the_recipe(values):
    env = dict(values["serve_env"], B12X_ROCE_HCA="rocep1s0f0,roceP2p1s0f0")
    with pytest.raises(launch.LaunchError, match=re.escape("serve_env.B12X_ROCE_HCA: is rendered per rank")):
        render_all(dict(values, serve_env=env), cluster("tp4-ring"))


def test_the_vllm_recipe_is_untouched_by_the_sglang_file():
    values = load_recipe()
    assert values["serve_engine"] == "vllm" and values["serve_port"] == 8000
    assert values["serve_patched_flags"]["sglang-tp4-v2.4"] == []
