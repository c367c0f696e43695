"""GPU clock readings (constructed nvidia-smi CSV in tests/fixtures/gpu, see SOURCE.md) and the latch check."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host, Unavailable
from tests.conftest import FIXTURES

GPU = FIXTURES / "gpu"


def read(name):
    return gpu.parse_query((GPU / name).read_text())


def test_a_latched_gb10_while_serving_is_an_error_with_the_power_fix():
    found = gpu.latch_findings(read("latched-serving.csv"), serving=True)
    assert [(f["found"], f["severity"]) for f in found] == [("702 MHz", "error")]
    assert "unplug its power adapter" in found[0]["fix"]


def test_healthy_or_idle_clocks_are_not_findings():
    assert gpu.latch_findings(read("recovered-serving.csv"), serving=True) == []
    assert gpu.latch_findings(read("latched-serving.csv"), serving=False) == []  # idle clocks are low by design
    assert read("locked-idle.csv")[0]["sm_mhz"] == 2190


def test_unsupported_fields_read_as_none_and_never_as_a_latch():
    gpus = read("unsupported-fields.csv")
    assert gpus == [{"index": 0, "name": "NVIDIA GB10", "sm_mhz": None, "max_sm_mhz": None, "utilization": None,
                     "temperature": 38}]
    assert gpu.latch_findings(gpus, serving=True) == []


def test_a_truncated_line_is_an_error_not_a_reading():
    with pytest.raises(ValueError, match="expected 6"):
        gpu.parse_query("0, NVIDIA GB10, 702\n")


def test_a_recorded_gb10_row_of_another_query_is_refused_not_misread():
    # Real GB10 output (SOURCE.md), but of an inventory query with 8 columns: its temperature (52) must never be
    # taken for a clock.
    with pytest.raises(ValueError, match="printed 8 fields, expected 6"):
        read("gb10-inventory-query.csv")


def test_off_a_spark_the_check_is_skipped_with_the_reason(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").write_text("")
    host = Host(str(tmp_path), run=lambda argv: (127, "", "nvidia-smi: not found"))
    with pytest.raises(Unavailable, match="not a DGX Spark \\(a podman container\\)"):
        gpu.clocks(host)


def test_on_a_spark_the_query_is_run_and_parsed(tmp_path):
    csv = (GPU / "latched-serving.csv").read_text()

    def run(argv):
        if argv == gpu.QUERY:
            return 0, csv, ""
        return 0, "NVIDIA GB10\n", ""  # platform.is_spark's name query

    assert gpu.clocks(Host(str(tmp_path), run=run))[0]["sm_mhz"] == 702
