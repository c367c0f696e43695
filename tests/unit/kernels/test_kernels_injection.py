"""The injected fault (node_qualify inject_bitflip, `qualify --inject-bitflip`) that makes a healthy GPU look like
one whose repeats give different bits, and the two documents recorded through Ansible on the H200 device
machine (tests/fixtures/kernels/SOURCE.md): one passed, one refused because of the injected bit flip."""

import json

import torch

from ansible_collections.dgxspark.ds41f.plugins.module_utils import qualify as collection_side
from ds41f_kernels import cli, qualify
from tests.conftest import FIXTURES
from tests.unit.kernels.test_kernels_module import run_module

KERNELS = FIXTURES / "kernels"
PASSED = KERNELS / "h200-qualify-ansible.json"
INJECTED = KERNELS / "h200-qualify-injected-bitflip.json"


def test_the_flip_changes_the_output_bits_on_every_second_run_only():
    src = torch.randn(64, dtype=torch.bfloat16)
    out = torch.empty_like(src)
    run = qualify.flipping(lambda: out.copy_(src), out)
    same = []
    for _ in range(6):
        run()
        same.append(torch.equal(out.view(torch.int16), src.view(torch.int16)))
    assert same == [True, False, True, False, True, False]
    run()
    assert torch.equal(out[1:].view(torch.int16), src[1:].view(torch.int16))  # one element touched, no more


def test_the_command_line_and_the_module_pass_the_kernel_to_flip():
    assert cli.parser().parse_args(["qualify", "--inject-bitflip", "copy"]).inject_bitflip == "copy"
    assert collection_side.command("img", inject_bitflip="gemm_bf16_decode")[-2:] == [
        "--inject-bitflip", "gemm_bf16_decode"]
    assert "--inject-bitflip" not in collection_side.command("img", inject_bitflip="")


def test_the_recorded_refusal_says_first_that_the_fault_was_injected_then_names_the_kernel():
    doc = collection_side.parse(INJECTED.read_text())
    assert doc["status"] == "failed" and doc["injected_fault"]["kernel"] == "gemm_bf16_decode"
    assert doc["census"]["alone"] == {"copy": 0, "triad": 0, "gemm_bf16": 0, "gemm_fp8": 0, "gemm_bf16_decode": 500}
    found = collection_side.failures(doc)
    assert found[0].startswith("fault injected on purpose into gemm_bf16_decode")
    assert found[1:] == [
        "census: gemm_bf16_decode gave different bits in 500 of 1000 repeats alone",
        "census: gemm_bf16_decode gave different bits in 500 of 1000 repeats beside a copy on another stream"]


def test_the_doctor_reads_the_recorded_refusal_as_drift_without_failing(tmp_path):
    out = run_module(tmp_path, {"image": "i", "record": str(INJECTED)}, check_mode=True)
    assert out.get("failed") is not True
    assert [d["setting"] for d in out["drift"]] == ["gpu qualification census gemm_bf16_decode"] * 2


def test_the_recorded_pass_through_ansible_has_only_the_cold_cache_as_drift():
    doc = collection_side.parse(PASSED.read_text())
    assert doc["status"] == "passed" and doc["census_mismatches"] == 0 and "injected_fault" not in doc
    assert doc["device"]["name"] == "NVIDIA H200" and doc["jit"]["compiled"] == 5
    assert collection_side.failures(doc) == []
    assert [d["found"] for d in collection_side.drift(doc)] == ["5 kernels compiled at run time"]
    assert json.loads(PASSED.read_text())["recorded_at"] == "2026-12-01T18:55:41Z"
