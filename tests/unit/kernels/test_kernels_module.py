"""node_qualify: the command it runs, how it reads the qualification document, what fails a node and what
the doctor sees. The document is the one recorded on an H200 (tests/fixtures/kernels/SOURCE.md); failing
variants are made from a copy here. The module itself runs for real, as Ansible runs it, on this machine,
which has no NVIDIA driver (CI's and the lab's situation)."""

import copy
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import qualify
from tests.conftest import FIXTURES, ROOT

RECORDED_TEXT = (FIXTURES / "kernels" / "h200-qualify.json").read_text()
RECORDED = json.loads(RECORDED_TEXT)
MODULE = ROOT / "plugins" / "modules" / "node_qualify.py"


def with_mismatch(doc=RECORDED, kernel="gemm_bf16", count=2):
    bad = copy.deepcopy(doc)
    bad["census"]["co_resident"][kernel] = count
    bad["status"] = "failed"
    for check in bad["checks"]:
        if check["name"] == "census":
            check.update(value=count, ok=False)
    return bad


def test_the_command_runs_the_image_without_network_and_mounts_a_cache_only_when_given():
    assert qualify.command("spark-ds41f:1030") == [
        "docker", "run", "--rm", "--gpus", "all", "--network", "none", "--entrypoint", "python3",
        "spark-ds41f:1030", "-m", "ds41f_kernels", "qualify", "--json"]
    argv = qualify.command("img", cache_dir="/var/cache/ds41f/tilelang", kind="gb10", repeats=2000)
    assert argv[argv.index("--volume") + 1] == "/var/cache/ds41f/tilelang:/var/cache/ds41f/tilelang"
    assert "TILELANG_CACHE_DIR=/var/cache/ds41f/tilelang" in argv
    assert argv[-4:] == ["--kind", "gb10", "--repeats", "2000"]


def test_the_document_is_found_after_anything_a_wrapper_printed_first():
    assert qualify.parse(RECORDED_TEXT)["device"]["name"] == "NVIDIA H200"
    noisy = "entrypoint: starting\n{not json\n" + RECORDED_TEXT
    assert qualify.parse(noisy)["census_mismatches"] == 0


@pytest.mark.parametrize("text,message", [
    ("Traceback (most recent call last):\nModuleNotFoundError: No module named 'ds41f_kernels'",
     "no qualification document"),
    ('{"schema": "ds41f-qualify/0", "status": "passed"}', "the image's ds41f_kernels does not match"),
    ('{"schema": "ds41f-qualify/1", "status": "maybe"}', "status 'maybe'"),
])
def test_an_output_that_is_not_a_qualification_is_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        qualify.parse(text)


def test_a_passed_run_has_no_failures_and_no_drift():
    assert qualify.failures(RECORDED) == [] and qualify.drift(RECORDED) == []


def test_a_census_mismatch_is_named_first_with_kernel_and_phase():
    bad = with_mismatch()
    for check in bad["checks"]:
        if check["name"] == "copy_vs_torch":
            check.update(value=0.7, ok=False)
    lines = qualify.failures(bad)
    assert lines[0] == "census: gemm_bf16 gave different bits in 2 of 1000 repeats beside a copy on another stream"
    assert lines[1].startswith("copy_vs_torch: 0.7, needs >= 0.95")
    entries = qualify.drift(bad)
    assert entries[0]["setting"] == "gpu qualification census gemm_bf16"
    assert entries[0]["found"] == "2 of 1000 repeats differed beside a copy on another stream"
    assert "keep this node out of serving" in entries[0]["fix"]
    assert {"setting", "expected", "found", "fix"} == set(entries[1])


def test_kernels_compiled_at_run_time_show_as_drift_of_the_image():
    cold = copy.deepcopy(RECORDED)
    cold["jit"].update(compiled=5, from_cache=0)
    (entry,) = qualify.drift(cold)
    assert entry["found"] == "5 kernels compiled at run time" and "ds41f_kernels warmup" in entry["fix"]


def run_module(tmp_path, args, check_mode=False):
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "collections"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(MODULE), str(argfile)], capture_output=True, text=True, env=env,
                          timeout=60)
    return json.loads(done.stdout)


@pytest.fixture(autouse=True)
def no_driver_here():
    # These runs describe a machine without an NVIDIA driver, like CI and the lab nodes.
    assert not os.path.exists("/proc/driver/nvidia/version"), "this test expects a machine without a GPU driver"


def test_on_a_node_without_a_driver_the_run_is_skipped_with_the_reason(tmp_path):
    out = run_module(tmp_path, {"image": "spark-ds41f:test", "record": str(tmp_path / "q.json")})
    assert out["skipped"] is True and out["changed"] is False
    assert out["msg"].startswith("node qualification skipped: not a DGX Spark, no NVIDIA driver")
    assert not (tmp_path / "q.json").exists()


def test_check_mode_reports_the_recorded_run_as_facts_without_running_anything(tmp_path):
    record = tmp_path / "q.json"
    record.write_text(RECORDED_TEXT)
    out = run_module(tmp_path, {"image": "spark-ds41f:test", "record": str(record)}, check_mode=True)
    assert out["changed"] is False and out["drift"] == [] and out["failures"] == []
    assert out["ansible_facts"]["ds41f_qualify"]["bandwidth"]["copy"]["tilelang_gbps"] > 0
    assert out["command"][:3] == ["docker", "run", "--rm"]


def test_check_mode_turns_a_recorded_mismatch_into_drift_for_the_doctor(tmp_path):
    record = tmp_path / "q.json"
    record.write_text(json.dumps(with_mismatch(kernel="gemm_bf16_decode", count=1)))
    out = run_module(tmp_path, {"image": "i", "record": str(record)}, check_mode=True)
    assert out.get("failed") is not True  # the doctor reports; only a real run fails the node
    assert out["drift"][0]["setting"] == "gpu qualification census gemm_bf16_decode"
    assert out["failures"][0].startswith("census: gemm_bf16_decode gave different bits in 1 of 1000")


def test_check_mode_without_a_record_on_a_node_without_a_driver_is_skipped(tmp_path):
    out = run_module(tmp_path, {"image": "i", "record": str(tmp_path / "none.json")}, check_mode=True)
    assert out["skipped"] is True
