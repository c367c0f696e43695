"""Threshold logic and the JSON shape of a qualification, from the document recorded on an H200
(tests/fixtures/kernels/SOURCE.md). Failing cases change a copy of it here, in the test."""

import copy
import json
import math

import pytest

from ds41f_kernels import profiles, verdict
from tests.conftest import FIXTURES

RECORDED = json.loads((FIXTURES / "kernels" / "h200-qualify.json").read_text())
KINDS = profiles.load()


def finished(doc, kind="h200"):
    return verdict.finish(copy.deepcopy(doc), KINDS[kind])


def by_name(doc):
    return {check["name"]: check for check in doc["checks"]}


def test_the_recorded_h200_run_has_the_documented_shape_and_passes_its_thresholds():
    doc = finished(RECORDED)
    assert doc["schema"] == verdict.SCHEMA == "ds41f-qualify/1"
    assert {"versions", "device", "thresholds", "jit", "bandwidth", "gemm", "block_scaled", "census", "checks",
            "census_mismatches", "status"} <= set(doc)
    assert doc["device"]["kind"] == "h200" and doc["device"]["arch"] == "sm_90a"
    assert set(doc["gemm"]) == {"gemm_bf16", "gemm_fp8", "gemm_bf16_decode"}
    assert doc["census"]["repeats"] == 1000 and set(doc["census"]["alone"]) == set(doc["census"]["co_resident"])
    assert doc["status"] == "passed" and doc["census_mismatches"] == 0
    checks = by_name(doc)
    assert checks["copy_vs_torch"]["ok"] is True and checks["copy_vs_torch"]["limit"] == 0.95
    assert checks["gemm_bf16_vs_torch"]["ok"] is True and checks["gemm_bf16_vs_torch"]["limit"] == 0.90
    # FP8 against torch._scaled_mm is measured and shown, not gated (a null threshold).
    assert checks["gemm_fp8_vs_torch"]["ok"] is None and checks["gemm_fp8_vs_torch"]["value"] > 0


def test_one_census_mismatch_fails_the_node_and_names_the_kernel():
    doc = copy.deepcopy(RECORDED)
    doc["census"]["co_resident"]["gemm_bf16_decode"] = 3
    done = finished(doc)
    assert done["status"] == "failed" and done["census_mismatches"] == 3
    census = by_name(done)["census"]
    assert census["ok"] is False
    assert "gemm_bf16_decode co-resident: 3 of 1000" in census["note"]
    assert "FAIL census" in verdict.summary(done)


def test_a_census_shorter_than_the_kind_requires_cannot_pass():
    doc = copy.deepcopy(RECORDED)
    doc["census"]["repeats"] = 10
    census = by_name(finished(doc))["census"]
    assert census["ok"] is False and "ran 10 repeats; this device kind requires 1000" in census["note"]


def test_a_slow_copy_fails_against_torch_and_the_peak():
    doc = copy.deepcopy(RECORDED)
    doc["bandwidth"]["copy"].update(vs_torch=0.62, of_peak=0.55)
    checks = by_name(finished(doc))
    assert checks["copy_vs_torch"]["ok"] is False and checks["copy_of_peak"]["ok"] is False
    assert checks["triad_vs_torch_copy"]["ok"] is True


def test_a_measurement_nobody_took_fails_rather_than_passes():
    doc = copy.deepcopy(RECORDED)
    del doc["gemm"]["gemm_bf16"]
    checks = by_name(finished(doc))
    assert checks["gemm_bf16_vs_torch"]["ok"] is False and checks["gemm_bf16_vs_torch"]["note"] == "not measured"


def test_a_nan_error_never_passes():
    doc = copy.deepcopy(RECORDED)
    doc["gemm"]["gemm_fp8"]["rel_error"] = math.nan
    assert by_name(finished(doc))["gemm_fp8_rel_error"]["ok"] is False


def test_a_copy_must_be_exact_and_a_triad_within_one_rounding():
    doc = copy.deepcopy(RECORDED)
    doc["bandwidth"]["copy"]["rel_error"] = 1e-9
    doc["bandwidth"]["triad"]["rel_error"] = 5e-7
    checks = by_name(finished(doc))
    assert checks["copy_rel_error"]["ok"] is False and checks["triad_rel_error"]["ok"] is True


def test_thresholds_come_from_the_kind_the_data_gives():
    # The same measurements judged by the GB10's entry: its own peak limit, and an FP8 check because
    # thresholds.yml lists float8_e4m3 for the GB10 too.
    gb10 = by_name(finished(RECORDED, "gb10"))
    assert gb10["copy_of_peak"]["limit"] == KINDS["gb10"]["thresholds"]["copy_of_peak_min"] == 0.75
    assert "gemm_fp8_vs_torch" in gb10
    default = finished(RECORDED, "default")
    assert "gemm_fp8_vs_torch" not in by_name(default)  # default lists bf16 only
    assert by_name(default)["copy_of_peak"]["ok"] is None  # no datasheet peak for an unknown device


def test_a_skipped_document_reads_plainly():
    doc = json.loads((FIXTURES / "kernels" / "cpu-skipped.json").read_text())
    assert doc["status"] == "skipped" and "no CUDA device" in doc["reason"]
    assert verdict.summary(doc).splitlines()[:2] == ["qualification skipped: no device (-)", "  " + doc["reason"]]


@pytest.mark.parametrize("value,limit,op,ok", [(0.95, 0.95, ">=", True), (0.9499, 0.95, ">=", False),
                                               (0.01, 0.01, "<=", True), (0.0101, 0.01, "<=", False)])
def test_limits_are_inclusive(value, limit, op, ok):
    assert verdict._check("x", value, limit, op)["ok"] is ok
