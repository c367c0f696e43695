"""The launch details each shape was qualified with: devices, cpuset and environment, per shape, from the sources.

Sources (facts, not wording, are used):
- seed 000 (000_72fb2218289d1604.txt) line 243: tp4-ring is pinned to the GB10's ten fast cores, 5-9,15-19;
- seed 000 line 259: the output head lives in the GB10 display carve-out on tp3-triangle (ordinary memory on
  tp4-ring); seed 004 (004_cb9e36cfd5b1eff8.txt) line 158: the carve-out (r5k, via a DRM dumb buffer) is what
  grew the 4 KiB triangle's KV pool to 2.2 GiB a rank, tp3-triangle-4k's sizing;
- ../shared/research/deployments-in-the-field.md line 397: the DRM card is bound by path to /dev/dri/card0 with
  the cgroup rule c 226:* rw; line 85: the carve-out's switch, SPARK_DS41F_DISPLAY_CARVEOUT_WEIGHTS=1 (the seeds
  name no switch of their own);
- the same file, line 99: OMP_NUM_THREADS=8; line 101: PYTORCH_CUDA_ALLOC_CONF; lines 418-421: the V2 model
  runner, AOT compile and fast safetensors of spark-ds41f's configs.
"""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, topology

from .test_launch import specs

CARD = "type=bind,source=/dev/dri/by-path/pci-000f:01:00.0-card,target=/dev/dri/card0"
CARVEOUT = ("tp3-triangle", "tp3-triangle-4k")
CONFIG_ENV = {
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,garbage_collection_threshold:0.6",
    "OMP_NUM_THREADS": "8",
    "VLLM_USE_V2_MODEL_RUNNER": "1",
    "VLLM_USE_AOT_COMPILE": "1",
    "SAFETENSORS_FAST_GPU": "1",
}


def pairs(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


@pytest.mark.parametrize("shape", sorted(topology.SHAPES))
def test_every_rank_of_every_shape_gets_its_qualified_launch_details(recipe, shape):
    for spec in specs(recipe, shape):
        argv = launch.docker_run(spec)
        carveout = shape in CARVEOUT
        assert pairs(argv, "--mount") == ([CARD] if carveout else [])
        assert pairs(argv, "--device-cgroup-rule") == (["c 226:* rw"] if carveout else [])
        assert (spec["env"].get("SPARK_DS41F_DISPLAY_CARVEOUT_WEIGHTS") == "1") == carveout
        assert pairs(argv, "--cpuset-cpus") == (["5-9,15-19"] if shape == "tp4-ring" else [])
        for key, value in CONFIG_ENV.items():
            assert spec["env"][key] == value, (shape, key)
        assert pairs(argv, "--device") == ["/dev/infiniband:/dev/infiniband:rwm"]


def test_a_site_cpuset_wins_and_an_empty_table_renders_none(recipe):
    ring = specs(dict(recipe, serve_cpuset="0-19"), "tp4-ring")[0]
    assert ring["cpuset"] == "0-19"
    bare = specs(dict(recipe, serve_shape_launch={}), "tp3-triangle")[0]
    assert not bare["device_binds"] and not bare["device_cgroup_rules"] and not bare["cpuset"]
    assert "SPARK_DS41F_DISPLAY_CARVEOUT_WEIGHTS" not in bare["env"]


@pytest.mark.parametrize("entry,words", [
    ({"memory": "64g"}, r"serve_shape_launch\.tp3-triangle\.memory: is not a launch detail"),
    ({"device_binds": ["/dev/dri/card0:/dev/dri/card0"]}, r"device_binds\[0\]: .* is not \{source, target\}"),
    ({"device_binds": [{"source": "dri", "target": "/dev/dri/card0"}]}, r"device_binds\[0\]"),
    ({"env": {"OMP_NUM_THREADS": "4"}}, r"env\.OMP_NUM_THREADS: is also set in serve_env"),
])
def test_a_bad_shape_entry_is_refused_naming_it(recipe, entry, words):
    bad = dict(recipe, serve_shape_launch={"tp3-triangle": entry})
    with pytest.raises(launch.LaunchError, match=words):
        specs(bad, "tp3-triangle")
