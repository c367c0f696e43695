"""Every qualification kernel lowers to CUDA source for sm_90a (H200) and sm_121a (GB10) on a CPU-only
machine, with the tensor-core instructions each architecture should use and shared memory it has.

Lowering is TileLang's real compiler down to CUDA C; nvcc and a GPU are not involved, so nothing here
claims a kernel ran. Each (kind, arch) pair is lowered once per session and shared by the tests.
"""

import json
import subprocess
import sys

import pytest

from ds41f_kernels import catalog, profiles

KINDS = profiles.load()
PAIRS = [(kind, arch) for kind in ("h200", "gb10") for arch in ("sm_90a", "sm_121a")]


@pytest.fixture(scope="module")
def lowered():
    out = {}
    for kind, arch in PAIRS:
        for kernel in catalog.kernels_for(KINDS[kind], arch):
            out[kind, arch, kernel.name] = (kernel, *catalog.lower(kernel, arch))
    return out


def test_every_kernel_of_every_kind_lowers_for_both_architectures(lowered):
    names = {"copy", "triad", "gemm_bf16", "gemm_fp8", "gemm_bf16_decode"}
    for kind, arch in PAIRS:
        assert {name for (k, a, name) in lowered if (k, a) == (kind, arch)} == names
    for (kind, arch, name), (_, source, _, _) in lowered.items():
        assert '__global__ void' in source and 'extern "C"' in source, (kind, arch, name)


def test_shared_memory_fits_each_architecture(lowered):
    for (_, arch, name), (_, _, smem, _) in lowered.items():
        assert smem <= catalog.SHARED_MEMORY_LIMIT[arch], (arch, name, smem)
    # The Hopper tile would not fit a GB10: the per-architecture tiles are what keep it out.
    hopper_tile = catalog.tiles_for("sm_90a")["bfloat16"]
    assert (hopper_tile.block_m + hopper_tile.block_n) * hopper_tile.block_k * 2 * hopper_tile.stages > \
        catalog.SHARED_MEMORY_LIMIT["sm_121a"]


def test_hopper_gemms_use_wgmma_and_sm121_gemms_use_mma_sync(lowered):
    for (_, arch, name), (_, source, _, threads) in lowered.items():
        family = catalog.tensor_core(source)
        if name in ("gemm_bf16", "gemm_fp8"):
            assert family == ("wgmma" if arch == "sm_90a" else "mma.sync"), (arch, name)
            assert threads == 384, (arch, name)  # two consumer warpgroups and a producer: warp-specialised
        elif name == "gemm_bf16_decode":
            assert family == "mma.sync", (arch, name)  # 16 rows are below wgmma's 64
        else:
            assert family is None, (arch, name)


def test_fp8_gemms_multiply_e4m3_and_stream_kernels_move_wide_vectors(lowered):
    for (_, arch, name), (_, source, _, _) in lowered.items():
        if name == "gemm_fp8":
            assert "fp8_e4_t" in source and "kFloat8_e4m3" in source, arch
        if name == "copy":
            wide = "float4" in source if arch == "sm_90a" else "load_global_256" in source
            assert wide, (arch, source)


def test_the_lower_command_prints_every_kernel_and_writes_its_source(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ds41f_kernels", "lower", "--kind", "gb10", "--arch", "sm_121a",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)  # stdout holds only the JSON, whatever TileLang logs
    assert {row["kernel"] for row in rows} == {"copy", "triad", "gemm_bf16", "gemm_fp8", "gemm_bf16_decode"}
    assert all(row["fits"] and row["arch"] == "sm_121a" for row in rows)
    assert (tmp_path / "gb10-sm_121a-gemm_bf16.cu").read_text().count("mma_sync") > 0
