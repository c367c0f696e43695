"""The launch spec: every rank's container from recipe + shape + node, and nothing typed twice."""

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.filter import serve as serve_filters
from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, topology

from .conftest import ROOT, cluster, load_recipe


def node_vars(c, name):
    """What the inventory plugin gives a host (its fabric view), as the filter reads it."""
    hv = dict(c.hostvars(name), spark_gid_index=c.gid_index, spark_nodes=c.groupvars()["spark_nodes"])
    return launch.node_from_vars(hv, hv["spark_rank"])


def specs(values, shape):
    c = cluster(shape)
    recipe = launch.recipe_from_vars(values)
    shape_vars = c.groupvars()["spark_shape"]
    return [launch.render(recipe, shape_vars, node_vars(c, n.name),
                          {"nodes": len(c.nodes), "head_address": c.head.address})
            for n in c.nodes]


def flag(argv, name):
    return argv[argv.index(name) + 1]


def test_group_flags_come_from_the_shape_and_the_node(recipe):
    ranks = specs(recipe, "tp4-ring")
    for rank, spec in enumerate(ranks):
        argv = spec["command"]
        assert argv[0] == recipe["model_container_path"]  # for the image's `vllm serve` entrypoint
        assert flag(argv, "--tensor-parallel-size") == "4" and flag(argv, "--nnodes") == "4"
        assert flag(argv, "--node-rank") == str(rank)
        assert flag(argv, "--master-addr") == "192.168.1.11" and flag(argv, "--master-port") == "9999"
        assert ("--headless" in argv) == (rank != 0)
        assert flag(argv, "--max-model-len") == "1048576"
        assert flag(argv, "--max-num-seqs") == "16" and flag(argv, "--max-num-batched-tokens") == "16384"
        assert flag(argv, "--kv-cache-memory-bytes") == str(topology.SHAPES["tp4-ring"].kv_cache_bytes)
        assert flag(argv, "--long-prefill-token-threshold") == "16288"
        assert json.loads(flag(argv, "--speculative-config"))["draft_tensor_parallel_size"] == 4
        compilation = json.loads(flag(argv, "--compilation-config"))
        assert compilation["cudagraph_capture_sizes"][-1] == 96 == int(flag(argv, "--max-cudagraph-capture-size"))
        assert flag(argv, "--prefix-cache-retention-interval") == "8192"  # the ring profile's own
    # one recipe for the cluster, one spec per rank
    assert len({s["labels"]["ds41f.recipe"] for s in ranks}) == 1
    assert len({s["labels"]["ds41f.spec"] for s in ranks}) == 4


def test_triangle_sizes_differ_only_where_the_shape_does(recipe):
    tri = specs(recipe, "tp3-triangle")[1]["command"]
    assert flag(tri, "--tensor-parallel-size") == "3" and flag(tri, "--max-num-seqs") == "8"
    assert flag(tri, "--long-prefill-token-threshold") == "6096"
    assert json.loads(flag(tri, "--compilation-config"))["cudagraph_capture_sizes"][-1] == 48
    assert flag(tri, "--max-cudagraph-capture-size") == "48" and flag(tri, "--prefix-cache-retention-interval") == "512"
    assert specs(recipe, "tp3-triangle")[0]["labels"]["ds41f.shape"] != specs(recipe, "tp4-ring")[0]["labels"][
        "ds41f.shape"]


def test_recipe_overrides_of_context_and_kv(recipe):
    recipe = dict(recipe, serve_max_model_len=4096, serve_kv_cache_bytes=64 << 20)
    argv = specs(recipe, "tp3-triangle-4k")[0]["command"]
    assert flag(argv, "--max-model-len") == "4096" and flag(argv, "--kv-cache-memory-bytes") == str(64 << 20)
    # vLLM refuses a long-prefill threshold above the context (seen in the lab: 4048 > 2048)
    assert flag(specs(dict(recipe, serve_max_model_len=2048), "tp3-triangle-4k")[0]["command"],
                "--long-prefill-token-threshold") == "2048"
    with pytest.raises(launch.LaunchError, match="serve_max_model_len"):
        specs(dict(recipe, serve_max_model_len=300000), "tp3-triangle-4k")


def test_a_rendered_flag_in_the_recipe_args_is_refused(recipe):
    bad = dict(recipe, serve_args=recipe["serve_args"] + ["--tensor-parallel-size", "2"])
    with pytest.raises(launch.LaunchError, match=r"serve_args\[\d+\]: --tensor-parallel-size"):
        specs(bad, "tp4-ring")


def test_the_container_carries_the_recipe_environment_and_limits(recipe):
    spec = specs(recipe, "tp4-ring")[2]
    argv = launch.docker_run(spec, api_key_file="/etc/ds41f/serve/api-key.env")
    assert argv[:4] == ["docker", "run", "-d", "--name"] and "spark-ds41f" in argv
    joined = " ".join(argv)
    for part in ("--network host", "--ipc host", "--gpus all", "--device /dev/infiniband:/dev/infiniband:rwm",
                 "--cap-add IPC_LOCK", "--ulimit memlock=-1:-1", "--shm-size 16g", "--memory 112g",
                 "--env-file /etc/ds41f/nccl.env", "--env-file /etc/ds41f/serve/api-key.env",
                 "--env VLLM_NO_USAGE_STATS=1", "--env HF_HUB_OFFLINE=1",
                 "--volume %s:%s:ro" % (recipe["model_dir"], recipe["model_container_path"]), "--label ds41f.rank=2"):
        assert part in joined
    image = argv.index("spark-ds41f:spark-ds41f-1030")
    assert argv[image + 1:] == spec["command"]
    # a rollback pins the image ID instead of the tag
    assert "sha256:abc" in launch.docker_run(spec, image="sha256:abc")


def test_the_filter_reads_hostvars_and_reports_bad_input(recipe):
    c = cluster("tp3-triangle")
    shape = c.groupvars()["spark_shape"]
    hostvars = dict(recipe, **c.hostvars("dgx3"), **c.groupvars())
    spec = serve_filters.launch_spec(hostvars, shape, 2, 3, c.head.address)
    assert json.loads(spec["env"]["SPARKNET_ROCE_PEER_HCAS"]).keys() == {"0", "1"}
    assert spec["rank"] == 2 and "--headless" in spec["command"]
    # the rank's own management address, on the network of --master-addr, for the group's message queues
    assert spec["env"]["VLLM_HOST_IP"] == c.groupvars()["spark_nodes"][2]["address"] != c.head.address
    assert serve_filters.docker_command(spec).startswith("docker run -d --name spark-ds41f")
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="serve_image"):
        serve_filters.launch_spec(dict(hostvars, serve_image=""), shape, 0, 3, c.head.address)
    with pytest.raises(AnsibleFilterError, match="serve_env.VLLM_HOST_IP: is each rank's own management address"):
        serve_filters.launch_spec(dict(hostvars, serve_env={"VLLM_HOST_IP": "10.0.0.9"}), shape, 2, 3, c.head.address)
    # a host without the topology's fabric view cannot render sparknet's routes
    with pytest.raises(AnsibleFilterError, match="spark_peer_hcas: is not set"):
        serve_filters.launch_spec(recipe, shape, 0, 3, c.head.address)


def test_boot_markers():
    log = "INFO engine (v0.32.0)\nCPU KV cache size: 65,536 tokens\nWARNING attention: falling back to SDPA\n"
    assert serve_filters.boot_markers_missing(log, ["KV cache size: [0-9,]+ tokens", "Starting vLLM server"]) == [
        "Starting vLLM server"]
    assert serve_filters.boot_markers_found(log, ["(?i)falling back"]) == [
        "(?i)falling back: WARNING attention: falling back to SDPA"]


def test_capture_sizes_follow_the_recorded_profiles():
    """spark-ds41f's ring and triangle profiles list these sizes (tests/fixtures/release/); other row counts follow
    the same steps and end at their own."""
    profiles = (("tp4-ring", "spark-ds41f-tp4-ring.json"), ("tp3-triangle", "spark-ds41f-tp3-triangle.json"))
    for shape, profile in profiles:
        args = json.loads((ROOT / "tests" / "fixtures" / "release" / profile).read_text())["serve_args"]
        recorded = json.loads(flag(args, "--compilation-config"))["cudagraph_capture_sizes"]
        assert launch.capture_sizes(topology.SHAPES[shape].cudagraph_max_rows) == recorded
    assert launch.capture_sizes(6) == [1, 2, 3, 4, 6]
    assert launch.capture_sizes(50) == [1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32, 40, 48, 50]


def test_a_shape_adds_its_own_flags_last_and_may_not_repeat_the_recipe(recipe):
    argv = specs(recipe, "tp4-ring")[0]["command"]
    assert argv[-2:] == ["--prefix-cache-retention-interval", "8192"]
    for args, words in ((["--block-size", "16"], "is also in serve_args"),
                        (["--max-num-seqs", "4"], "is rendered from the shape"), ("--x", "a list of strings")):
        launch_table = dict(recipe["serve_shape_launch"], **{"tp4-ring": {"args": args}})
        with pytest.raises(launch.LaunchError, match=words):
            specs(dict(recipe, serve_shape_launch=launch_table), "tp4-ring")


def test_lab_recipe_renders(recipe):
    lab = load_recipe(*sorted((cluster_dir() / "group_vars").glob("*.yml")))
    argv = specs(lab, "tp3-triangle-4k")[0]["command"]
    assert flag(argv, "--kv-cache-memory-bytes") == str(64 << 20)


def cluster_dir():
    return ROOT / "molecule" / "serve-lab"
