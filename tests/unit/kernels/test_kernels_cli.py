"""The ds41f_kernels command on a machine without a GPU (CI's): it says so plainly and never pretends.

The runs on a GPU are in docs/kernels.md; none is simulated here.
"""

import json
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import qualify as collection_side
from ds41f_kernels import measure, qualify


def run(*args):
    return subprocess.run([sys.executable, "-m", "ds41f_kernels", *args], capture_output=True, text=True,
                          timeout=300)


def test_qualify_without_a_gpu_prints_one_skipped_document_and_exits_3():
    done = run("qualify", "--json")
    assert done.returncode == 3, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["schema"] == "ds41f-qualify/1" and doc["status"] == "skipped"
    assert "no CUDA device visible" in doc["reason"]
    assert doc["versions"]["tilelang"] == "0.1.15" and doc["versions"]["torch"]
    assert "checks" not in doc  # nothing measured, nothing judged
    assert collection_side.parse(done.stdout)["status"] == "skipped"  # what the module reads


def test_warmup_without_a_gpu_asks_for_the_device_kind():
    done = run("warmup")
    assert done.returncode != 0 and "name the device kind with --kind" in done.stderr


def test_a_kind_without_a_fixed_architecture_needs_one_named():
    done = run("warmup", "--kind", "default")
    assert done.returncode != 0 and "give --arch" in done.stderr


def test_block_scaled_support_is_what_the_installed_tilelang_can_emit():
    # TileLang 0.1.15 ships SM120 block-scaled MMA for NVFP4 (mxf4nvf4, 4 scales of ue4m3) only; the
    # qualification asks its table, so MXFP8 and MXFP4 read as unsupported with TileLang's own reason.
    from tilelang.cuda.intrinsics.macro.mma_sm120_macro_generator import _get_block_scale_mma_config

    _get_block_scale_mma_config("mxf4nvf4", 4, "ue4m3")  # present: the probe can say yes
    found = qualify.block_scaled("sm_121a", ["mxfp8", "mxfp4"])
    for fmt in ("mxfp8", "mxfp4"):
        assert found[fmt]["supported"] is False and found[fmt]["measured"] is False
        assert "Unsupported SM120 block-scale MMA config" in found[fmt]["reason"]
    assert "sm_90a has no block-scaled MMA" in qualify.block_scaled("sm_90a", ["mxfp8"])["mxfp8"]["reason"]


@pytest.mark.parametrize("kernel,neighbour,share", [
    ([(0, 10), (20, 30)], [(5, 25)], 0.5),
    ([(0, 10)], [(0, 4), (6, 20)], 0.8),
    ([(0, 10), (10, 20)], [], 0.0),
    ([(0, 10)], [(10, 20)], 0.0),
])
def test_co_resident_share_is_the_part_of_the_kernels_time_the_neighbour_ran_too(kernel, neighbour, share):
    assert measure.overlap_share(kernel, neighbour) == share
