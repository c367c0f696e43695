"""The running container's settings as Docker holds them, against what its launch spec decides: a `docker update`
or a container made by hand is a row on the container, and every container no stage runs is a row with its memory.
The cases are generated from what `docker update` can change, on a recorded `docker inspect` of a lab rank."""

import json
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, live_checks
from ansible_collections.dgxspark.ds41f.plugins.modules import live_state

ROOT = Path(__file__).resolve().parents[3]
INSPECT = json.loads((ROOT / "tests" / "fixtures" / "containers" / "lab-head-rank.json").read_text())[0]
# The lab recipe's launch details of that rank (group_vars of inventories/lab); Docker added label=disable itself
SPEC = {"name": "spark-ds41f", "memory": "4g", "shm_size": "256m", "security_opt": [],
        "cap_add": [], "ulimits": [], "devices": [], "cpuset": ""}


def rows(host):
    state = {"running": True, "host_config": live_state.host_settings(host)}
    # only the settings: the spec's image, command, env and mounts are left out of this comparison
    spec = dict(SPEC, image=None, entrypoint=["x"], command=[], env={}, mounts=[])
    state.update(entrypoint=["x"], command=[], env=[], image_env=[], mounts=[])
    return live_checks.container("dgx1", spec, state, "fix")


def test_the_recorded_rank_runs_its_spec():
    assert live_state.host_settings(INSPECT["HostConfig"]) == launch.host_config(SPEC)
    assert rows(INSPECT["HostConfig"]) == []


# What `docker update` can change, each to a value the spec does not have (Docker's names and units).
UPDATES = {"RestartPolicy": {"Name": "always", "MaximumRetryCount": 0}, "Memory": 8 << 30, "MemorySwap": -1,
           "CpusetCpus": "0-3", "CpuShares": 512, "NanoCpus": 2_000_000_000, "CpuPeriod": 100000,
           "CpuQuota": 50000, "CpuRealtimePeriod": 1000, "CpuRealtimeRuntime": 950, "CpusetMems": "0",
           "BlkioWeight": 300, "MemoryReservation": 1 << 30, "PidsLimit": 100}


@pytest.mark.parametrize("key", sorted(UPDATES))
def test_each_setting_docker_update_changes_is_one_row_on_the_container(key):
    host = dict(INSPECT["HostConfig"], **{key: UPDATES[key]})
    found = rows(host)
    assert [r["setting"] for r in found] == ["container %s" % key]
    assert found[0]["object"] == {"kind": "container", "name": "spark-ds41f"}
    # put back in place without a restart where Docker can (it reads 0 or an empty value as "keep"), else a new
    # container
    if launch.host_config(SPEC)[key] in (0, "") and key != "RestartPolicy":
        assert found[0]["fix"] == "fix"
    else:
        assert found[0]["fix"] == "docker update %s=%s spark-ds41f on dgx1" % (
            launch.UPDATE_FLAGS[key], launch.host_config(SPEC)[key])


def test_every_update_docker_offers_is_compared():
    """The keys compared cover docker update's options (docker 20.10+: --blkio-weight, --cpu-*, --cpus,
    --cpuset-*, --memory*, --pids-limit, --restart; --kernel-memory is gone)."""
    assert set(UPDATES) == set(launch.UPDATE_FLAGS) and set(UPDATES) <= set(launch.host_config(SPEC))


def test_a_container_no_stage_runs_is_a_row_with_the_memory_it_holds():
    found = live_checks.strangers("dgx3", [
        {"name": "jupyter", "image": "nvcr.io/nvidia/pytorch:25.01", "state": "running", "memory": "38.2GiB"},
        {"name": "old", "image": "busybox", "state": "exited", "memory": None}], "spark-ds41f")
    assert [(r["node"], r["object"]["name"], r["severity"]) for r in found] == [
        ("dgx3", "jupyter", "error"), ("dgx3", "old", "warn")]
    assert "holding 38.2GiB" in found[0]["found"] and "docker rm -f jupyter on dgx3" in found[0]["fix"]
