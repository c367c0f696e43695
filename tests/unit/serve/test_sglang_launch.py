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


def test_every_rank_joins_the_head_distributed_init_and_serves_on_8888_through_the_proxy(values):
    c = cluster("tp4-ring")
    specs = render_all(values, c)
    assert len(specs) == 4
    for rank, spec in enumerate(specs):
        argv = spec["command"]
        assert spec["engine"] == "sglang" and spec["image"] == "dsv41-4x-spark:canary-roce"
        assert spec["entrypoint"] == ["python3", "-m", "sglang.launch_server"]
        assert flag(argv, "--model-path") == values["model_container_path"]
        assert flag(argv, "--tp-size") == "4" and flag(argv, "--nnodes") == "4"
        assert flag(argv, "--node-rank") == str(rank)
        assert flag(argv, "--dist-init-addr") == "192.168.1.11:20000"
        # the API on 8888 is the head's proxy; the engine itself listens on loopback only
        assert spec["port"] == 8888 and flag(argv, "--host") == "127.0.0.1"
        assert flag(argv, "--port") == str(values["serve_engine_port"]) != "8888"
        assert flag(argv, "--context-length") == "1048576" and flag(argv, "--max-running-requests") == "16"
        assert flag(argv, "--chunked-prefill-size") == "8192" and flag(argv, "--mem-fraction-static") == "0.78"
        assert "--headless" not in argv and argv.count("--served-model-name") == 1
        # RoCEnante's rails from this node's topology; sparknet is vLLM's and absent here
        assert spec["env"]["B12X_ROCE_HCA"] == ",".join(c.hostvars(c.nodes[rank].name)["spark_nccl_hcas"])
        assert not [k for k in spec["env"] if k.startswith("SPARKNET_")]
        assert spec["env"]["DSV41_MOE_B12X_NEXT"] == "1" and spec["env"]["SGLANG_RUST_BUILD_MODE"] == "never"
        assert spec["cpuset"] == ""  # the vLLM-qualified tp4-ring cpuset does not carry over
    assert len({s["labels"]["ds41f.recipe"] for s in specs}) == 1
    assert len({s["labels"]["ds41f.spec"] for s in specs}) == 4


def test_the_filter_renders_the_same_spec(values):
    c = cluster("tp4-ring")
    name = c.nodes[2].name
    hv = dict(values, **c.hostvars(name), spark_gid_index=c.gid_index)
    spec = serve_filters.launch_spec(hv, c.groupvars()["spark_shape"], 2, 4, c.head.address)
    assert spec == render_all(values, c)[2]
    assert "--dist-init-addr 192.168.1.11:20000" in serve_filters.docker_command(spec)


def test_an_explicit_vllm_engine_leaves_the_vllm_spec_byte_identical(recipe):
    c = cluster("tp4-ring")
    assert render_all(dict(recipe, serve_engine="vllm"), c) == render_all(recipe, c)
    assert "engine" not in render_all(recipe, c)[0]


# Flags the seed gives as its launcher's .env settings (start-tp4.sh turns them into these SGLang flags).
LAUNCHER_SETTING = {"--chunked-prefill-size": "CHUNKED_PREFILL_SIZE",
                    "--mem-fraction-static": "HEAD_MEM_FRACTION_STATIC", "--ep-size": "EP_SIZE",
                    "--speculative-algorithm": "SPEC_ALGO"}
# The seed's launcher as recorded (tests/fixtures/release/SOURCE.md): its container env is a source too.
LAUNCHER = ROOT / "tests" / "fixtures" / "release" / "sglang-tp4-ring.yml"


CACHE_MOUNT = "/cache/spark-ds41f/"  # a launcher cache folder moved into the site's cache mount


def launcher_env():
    return yaml.safe_load(LAUNCHER.read_text())["env"]


def every_env_and_flag_comes_from_the_seed(values):
    text = seed_text() + "".join("\n%s=%s" % kv for kv in launcher_env().items())
    missing = [k for k, v in values["serve_sglang_env"].items() if "%s=%s" % (k, v) not in text and not (
        k in launcher_env() and v.startswith(CACHE_MOUNT))]
    args = values["serve_sglang_args"]
    for i, arg in enumerate(args):
        if arg in LAUNCHER_SETTING:
            if "%s=%s" % (LAUNCHER_SETTING[arg], args[i + 1]) not in text:
                missing.append(arg)
        elif arg.startswith("--") and arg not in text:
            missing.append(arg)
        elif (arg.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--")
              and "%s %s" % (arg, args[i + 1]) not in text):
            missing.append("%s %s" % (arg, args[i + 1]))
    return missing


def test_every_env_value_and_flag_is_written_in_seed_001(values):
    assert every_env_and_flag_comes_from_the_seed(values) == []
    assert "8888 (API), 20000 (torch distributed init)" in seed_text()
    assert "nvidia-smi -lgc %s" % values["serve_sglang_clock_cap_lgc"] in seed_text()


def test_the_boot_markers_match_the_seed_lines_and_miss_a_dropped_one(values):
    markers = values["serve_sglang_boot_markers"]
    text = seed_text()
    assert serve_filters.boot_markers_missing(text, markers["required"]) == []
    assert serve_filters.boot_fallbacks(text, markers["fallback"], markers["kernel_families"]) == []
    without = "\n".join(line for line in text.splitlines() if not line.startswith("RoCEnante ready"))
    assert serve_filters.boot_markers_missing(without, markers["required"]) == ["RoCEnante ready: world=4 hcas="]


def with_args(values, **flags):
    args = list(values["serve_args"])
    for name, value in flags.items():
        name = "--" + name.replace("_", "-")
        i = args.index(name)
        if value is None:
            del args[i:i + 2]
        else:
            args[i + 1] = value
    return dict(values, serve_args=args)


@pytest.mark.parametrize(("flags", "words"), [
    ({"chunked_prefill_size": "16384"}, r"--chunked-prefill-size 16384 is above 8192 .*never to raise the chunk"),
    ({"mem_fraction_static": "0.80"}, r"--mem-fraction-static 0.80 is above 0.78.*Fix: lower it to 0.78"),
    ({"chunked_prefill_size": None}, r"--chunked-prefill-size is not set"),
    ({"mem_fraction_static": "lots"}, r"are not a token count and a fraction"),
])
def test_the_1m_memory_rules_of_seed_001_refuse(values, flags, words):
    with pytest.raises(launch.LaunchError, match=words):
        render_all(with_args(values, **flags), cluster("tp4-ring"))


def test_4096_chunks_may_take_the_upstream_fraction_and_short_contexts_are_not_judged(values):
    ok = with_args(values, chunked_prefill_size="4096", mem_fraction_static="0.80")
    assert flag(render_all(ok, cluster("tp4-ring"))[0]["command"], "--mem-fraction-static") == "0.80"
    # the seed measured 1M only: a 256k shape is not held to its rules
    short = with_args(values, chunked_prefill_size="16384")
    assert flag(render_all(short, cluster("tp3-triangle-4k"))[0]["command"], "--context-length") == "262144"


@pytest.mark.parametrize(("change", "words"), [
    ({"serve_args": ["--tp-size", "4"]}, r"serve_args\[0\]: --tp-size is rendered"),
    ({"serve_args": ["--dist-init-addr=10.0.0.1:1"]}, r"--dist-init-addr is rendered"),
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
    with pytest.raises(launch.LaunchError, match=re.escape("serve_env.B12X_ROCE_HCA: is derived per node")):
        render_all(dict(values, serve_env=env), cluster("tp4-ring"))


def test_the_vllm_recipe_is_untouched_by_the_sglang_file():
    values = load_recipe()
    assert values["serve_engine"] == "vllm" and values["serve_port"] == 8000
    assert values["serve_patched_flags"]["sglang-tp4-v2.4"] == []
