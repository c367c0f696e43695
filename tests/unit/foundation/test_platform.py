"""The hardware layer's node readings, from recorded real outputs (tests/fixtures/platform/SOURCE.md)."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host, Unavailable
from tests.conftest import FIXTURES

PLATFORM = FIXTURES / "platform"


def recorded(outputs):
    def run(argv):
        key = " ".join(argv)
        return (0, outputs[key], "") if key in outputs else (127, "", "%s: not found" % argv[0])

    return run


GPU_NAME = (PLATFORM / "gb10" / "nvidia-smi-query-gpu-name.txt").read_text()
GB10 = Host(str(PLATFORM / "gb10"), recorded({"nvidia-smi --query-gpu=name --format=csv,noheader": GPU_NAME}))
LAB = Host(str(PLATFORM / "labnode"), recorded({}))


def test_a_gb10_node_reads_as_a_spark_with_its_driver_and_page_size():
    found = platform.summary(GB10)
    assert found["dgx_spark"] is True and found["container"] is None
    assert found["driver"] == "580.173.02" and found["kernel"] == "6.17.0-1031-nvidia"
    assert found["page_size"] == 65536
    platform.require_spark(GB10, "GID check")  # does not raise


def test_a_lab_node_reads_as_a_podman_container_and_invents_nothing():
    found = platform.summary(LAB)
    assert found["container"] == "podman" and found["dgx_spark"] is False
    assert found["page_size"] == 4096 and found["kernel"]
    assert found["driver"] is None and found["uvm_srcversion"] is None and found["secure_boot"] is None


def test_hardware_steps_on_a_lab_node_say_why_they_are_skipped():
    with pytest.raises(Unavailable, match="GID check skipped: not a DGX Spark \\(a podman container\\)"):
        platform.require_spark(LAB, "GID check")
