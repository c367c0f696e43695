"""The hardware layer reading the H200 device machine as it was recorded (the `h200` entries of
tests/fixtures/platform, gpu and rdma SOURCE.md): an x86_64 GPU guest with an NVIDIA driver, not a DGX Spark.
nvidia-smi, procfs and sysfs print the same formats there as on a Spark; the values are the H200's."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu, platform, rdma
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host, Unavailable
from tests.conftest import FIXTURES

H200_TREE = FIXTURES / "platform" / "h200"
NAME_QUERY = "nvidia-smi --query-gpu=name --format=csv,noheader"


def recorded(outputs):
    """A runner that answers the recorded commands; anything else was not installed there (rc 127)."""
    def run(argv):
        key = " ".join(argv)
        return (0, outputs[key], "") if key in outputs else (127, "", "%s: not found" % argv[0])

    return run


H200 = Host(str(H200_TREE), recorded({NAME_QUERY: (H200_TREE / "nvidia-smi-query-gpu-name.txt").read_text()}))


def read_csv(name):
    return gpu.parse_query((FIXTURES / "gpu" / name).read_text())


def test_the_h200_host_reads_as_a_docker_guest_with_a_driver_that_is_not_a_spark():
    assert platform.summary(H200) == {
        "kernel": "6.18.44-fc-v973-gpu", "page_size": 4096, "container": "docker", "dgx_spark": False,
        "driver": "580.159.04", "uvm_srcversion": "EA59B8B96DECD0DBCF51499", "secure_boot": None, "governor": None}
    assert platform.gpu_names(H200) == ["NVIDIA H200"]
    with pytest.raises(Unavailable, match=r"GPU clock check skipped: not a DGX Spark \(a docker container\)"):
        gpu.clocks(H200)


def test_the_idle_h200_clock_row_parses_and_is_judged_only_while_serving():
    idle = read_csv("h200-idle.csv")
    assert idle == [{"index": 0, "name": "NVIDIA H200", "sm_mhz": 345, "max_sm_mhz": 1980, "utilization": 0,
                     "temperature": 35}]
    assert gpu.latch_findings(idle, serving=False) == []
    # The same row read as if serving is what the latch check exists to catch: why idle rows are never judged.
    assert [f["found"] for f in gpu.latch_findings(idle, serving=True)] == ["345 MHz"]


def test_clocks_sampled_under_the_qualification_load_stay_above_the_latch_floor():
    rows = read_csv("h200-during-qualify.csv")
    loaded = [row for row in rows if row["utilization"] >= 90]
    assert len(rows) == 64 and len(loaded) >= 30
    assert {row["max_sm_mhz"] for row in rows} == {1980}
    assert min(row["sm_mhz"] for row in loaded) == 1410  # power-capped under sustained GEMMs, not latched
    assert gpu.latch_findings(loaded, serving=True) == []


def test_a_host_without_rdma_devices_or_ethtool_reads_as_no_hca_and_unknown_speed():
    host = Host(str(FIXTURES / "rdma" / "h200-host"), recorded({}))
    assert rdma.has_hca(host, "rocep1s0f0") is False
    assert rdma.gid_table(host, "rocep1s0f0") == []
    assert rdma.port_state(host, "rocep1s0f0") is None
    assert rdma.link_speed(host, "eth0") is None  # sysfs -1: a virtual NIC with no speed to report
    assert rdma.link_speed(host, "lo") is None  # sysfs refuses (EINVAL), ethtool is not installed
