"""The doctor's live checks over readings shaped like dgxspark.ds41f.live_state's, on the real topology model."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import live_checks, topology

SITE = {"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp3-triangle",
        "nodes": [{"name": "dgx%d" % i, "address": "192.168.1.1%d" % i} for i in (1, 2, 3)]}


@pytest.fixture()
def cluster():
    return topology.build(SITE)


def healthy(cluster, mtu=9000):
    """Every node's links up at the MTU with their addresses, and every ping answered."""
    hosts = {}
    for node in cluster.nodes:
        links, pings = {}, []
        for link in cluster.links(node.name):
            links[link["netdev"]] = {"present": True, "operstate": "up", "carrier": True, "mtu": mtu,
                                     "addresses": ["%s/%d" % (link["address"], link["prefix"])]}
            pings.append({"netdev": link["netdev"], "address": link["peer_address"], "ok": True})
        hosts[node.name] = {"live": {"links": links, "pings": pings, "memory": {"available_gib": 90.0},
                                     "gpus": None, "container": None, "launch_spec": None},
                            "node": {"kernel": "6.17", "page_size": 4096}}
    return hosts


def evaluate(cluster, hosts):
    return live_checks.evaluate(hosts, cluster.cable_table(), 9000, 5.0, 3.0, "ds41f run serve")


def test_a_healthy_cluster_has_no_findings(cluster):
    assert evaluate(cluster, healthy(cluster)) == []


def test_a_wrong_mtu_on_one_end_is_one_finding_on_that_end_not_also_failed_pings(cluster):
    hosts = healthy(cluster)
    hosts["dgx2"]["live"]["links"]["enp1s0f1np1"]["mtu"] = 1500
    for node in hosts.values():  # what the wire does: every ping over that path fails, from both ends
        for p in node["live"]["pings"]:
            if p["address"] in ("10.12.1.1", "10.12.1.2"):
                p["ok"] = False
    found = evaluate(cluster, hosts)
    assert [(f["node"], f["setting"], f["found"], f["path"]) for f in found] == [
        ("dgx2", "enp1s0f1np1 mtu", 1500, "10.12.1.0/24")]
    assert "ip link set dev enp1s0f1np1 mtu 9000" in found[0]["fix"]


def test_a_pulled_cable_and_a_silent_path(cluster):
    hosts = healthy(cluster)
    del hosts["dgx3"]["live"]["links"]["enp1s0f0np0"]
    for p in hosts["dgx1"]["live"]["pings"]:
        if p["netdev"] == "enP2p1s0f0np0":
            p["ok"] = False
    found = {(f["node"], f["setting"]) for f in evaluate(cluster, hosts)}
    assert found == {("dgx3", "enp1s0f0np0 link"), ("dgx1", "enP2p1s0f0np0 reachability")}


def test_a_node_without_a_reading_is_not_judged_on_its_paths_but_its_peers_own_ends_are(cluster):
    """A frozen or unreachable node has no reading: its ends of the fabric are unknown, not missing (its own row,
    connected, no reply, says why), and its peers' pings to it judge nothing; a peer's own wrong end still shows."""
    hosts = healthy(cluster)
    del hosts["dgx3"]
    assert evaluate(cluster, hosts) == []
    for link in hosts["dgx1"]["live"]["links"].values():  # dgx1's own ends, its paths to dgx3 among them
        link["mtu"] = 1500
    found = {(f["node"], f["setting"]) for f in evaluate(cluster, hosts)}
    assert found == {("dgx1", "%s mtu" % netdev) for netdev in hosts["dgx1"]["live"]["links"]}


SPEC = {"name": "ds41f-serve", "image": "ds41f:1030", "command": ["serve", "/models", "--port", "8000"],
        "env": {"VLLM_NO_USAGE_STATS": "1", "NCCL_IB_GID_INDEX": "3"}, "mounts": ["/models:/models:ro"]}


def running(**changes):
    state = {"running": True, "image": "ds41f:1030", "command": ["serve", "/models", "--port", "8000"],
             "env": ["PATH=/usr/bin", "VLLM_NO_USAGE_STATS=1", "NCCL_IB_GID_INDEX=3"], "image_env": ["PATH=/usr/bin"],
             "mounts": ["/models:/models:ro"]}
    state.update(changes)
    return state


def test_the_container_matching_its_spec_is_clean():
    assert live_checks.container("dgx1", SPEC, running(), "fix") == []
    assert live_checks.container("dgx1", None, None, "fix") == []  # nothing deployed: nothing to compare


def test_each_env_var_that_differs_is_one_finding():
    env = ["PATH=/usr/bin", "VLLM_NO_USAGE_STATS=1", "NCCL_IB_GID_INDEX=4", "EXTRA=1"]
    found = live_checks.container("dgx2", SPEC, running(env=env), "ds41f run serve")
    assert [(f["setting"], f["expected"], f["found"]) for f in found] == [
        ("container env EXTRA", None, "1"), ("container env NCCL_IB_GID_INDEX", "3", "4")]


def test_command_mounts_image_and_a_stopped_container():
    found = live_checks.container("dgx1", SPEC, running(command=["serve"], mounts=[], image="other"), "f")
    assert [(f["setting"], f["expected"], f["found"]) for f in found] == [
        ("container image", "ds41f:1030", "other"),
        ("arguments before the flags (container command)", "serve /models", "serve"),
        ("--port (container command)", "8000", None), ("container mounts", "/models:/models:ro", "")]
    # A stopped or absent container is the serving group's row (its state, exit code and logs), not its settings.
    assert live_checks.container("dgx1", SPEC, running(running=False), "f") == []
    assert live_checks.container("dgx1", SPEC, None, "f") == []


def test_env_files_fill_the_expected_environment_and_secrets_are_never_compared():
    spec = dict(SPEC, env_files=["/etc/ds41f/nccl.env"], mounts=["/models:/models:ro,z"])
    env = ["PATH=/usr/bin", "VLLM_NO_USAGE_STATS=1", "NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA=rocep1s0f0",
           "VLLM_API_KEY=sk-secret"]
    files = {"/etc/ds41f/nccl.env": {"NCCL_IB_HCA": "rocep1s0f0"}}
    assert live_checks.container("dgx1", spec, running(env=env), "f", files, ["VLLM_API_KEY"]) == []
    found = live_checks.container("dgx1", spec, running(env=env), "f", {}, ["VLLM_API_KEY"])
    assert [(f["setting"], f["expected"]) for f in found] == [("container env NCCL_IB_HCA", None)]



def test_a_hand_edited_env_file_is_not_the_containers_fault_the_recipe_judges_it():
    """NCCL_IB_GID_INDEX edited in the node's nccl.env: the container (started from the recipe's file) is right,
    the file is wrong. Judged against the node's copy the container would get a `docker rm -f` fix; against the
    recipe it is clean, and the file's drift is the fabric stage's own row."""
    spec = dict(SPEC, env={"VLLM_NO_USAGE_STATS": "1"}, env_files=["/etc/ds41f/nccl.env"])
    hosts = {"dgx1": {"live": {"env_files": {"/etc/ds41f/nccl.env": {"NCCL_IB_GID_INDEX": "5"}}}}}
    state = running()
    edited = hosts["dgx1"]["live"]["env_files"]
    assert [f["setting"] for f in live_checks.container("dgx1", spec, state, "f", edited)] == [
        "container env NCCL_IB_GID_INDEX"]
    live_checks.env_files_from_recipe(hosts, "/etc/ds41f/nccl.env", {"dgx1": {"NCCL_IB_GID_INDEX": "3"}})
    assert live_checks.container("dgx1", spec, state, "f", hosts["dgx1"]["live"]["env_files"]) == []

def test_memory_against_the_guard_that_applies():
    assert live_checks.memory("dgx1", {"available_gib": 2.5}, True, 5, 3)[0]["severity"] == "error"
    assert live_checks.memory("dgx1", {"available_gib": 3.5}, True, 5, 3)[0]["severity"] == "warn"
    assert live_checks.memory("dgx1", {"available_gib": 4.5}, False, 5, 3)[0]["setting"].endswith("(startup guard)")
    assert live_checks.memory("dgx1", {"available_gib": 6.5}, False, 5, 3) == []


def test_alignment_names_the_stage_that_fixes_it_and_ignores_readings_nobody_has(cluster):
    hosts = healthy(cluster)
    for name, image in (("dgx1", "sha256:a"), ("dgx2", "sha256:a"), ("dgx3", "sha256:b")):
        hosts[name]["live"]["image_id"] = image
    found = evaluate(cluster, hosts)
    assert [(f["node"], f["stage"], f["setting"]) for f in found] == [("all", "image", "image_id")]
    assert "dgx3" in found[0]["found"]


def test_an_image_not_read_on_one_node_is_unknown_not_different(cluster):
    """Docker down on dgx3 (its row is the host baseline's): its image ID is not read, and the two it read agree."""
    hosts = healthy(cluster)
    for name, image in (("dgx1", "sha256:a"), ("dgx2", "sha256:a"), ("dgx3", None)):
        hosts[name]["live"]["image_id"] = image
    assert evaluate(cluster, hosts) == []
    hosts["dgx2"]["live"]["image_id"] = "sha256:b"
    assert [f["setting"] for f in evaluate(cluster, hosts)] == ["image_id"]
    hosts["dgx1"]["node"]["kernel"] = "6.18"  # a node fact still compares every node
    assert sorted(f["setting"] for f in evaluate(cluster, hosts)) == ["image_id", "kernel"]


def test_gpu_latch_needs_a_serving_container(cluster):
    hosts = healthy(cluster)
    gpus = [{"index": 0, "name": "NVIDIA GB10", "sm_mhz": 702, "max_sm_mhz": 3003, "utilization": 97,
             "temperature": 70}]
    hosts["dgx1"]["live"]["gpus"] = gpus
    assert evaluate(cluster, hosts) == []
    for node in hosts:  # the whole group serves, so only the clock is wrong
        hosts[node]["live"]["container"] = running()
    assert [f["setting"] for f in evaluate(cluster, hosts)] == ["GPU 0 SM clock while serving"]
