"""The image lock: what it must pin, the input hash, the build's job sizing."""

import shutil
from pathlib import Path

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import lockfile

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "images" / "lab"
RELEASE = ROOT / "images" / "spark-ds41f-1030"
GIB = 1 << 30


@pytest.fixture
def lab(tmp_path):
    """A copy of images/lab with its base pinned (as `ds41f lab image-inputs` does)."""
    folder = tmp_path / "lab"
    shutil.copytree(LAB, folder, ignore=shutil.ignore_patterns("src"))
    lock = yaml.safe_load((folder / "lock.yml").read_text())
    lock["base"]["sha256"] = "ab" * 32
    return folder, lock


def test_the_lab_lock_pins_everything_and_names_its_inputs(lab):
    folder, lock = lab
    plan = lockfile.load(lock, str(folder))
    assert plan["image"] == "ds41f-lab:lab-1"
    assert plan["files"] == ["Dockerfile", "patches/hello/0001-Greet-as-the-ds41f-lab-image.patch",
                             "patches/hello/0002-Mark-the-version-as-patched-twice.patch"]
    assert plan["labels"]["ds41f.input-hash"] == plan["input_hash"]
    assert plan["labels"]["ds41f.source.hello.tree"] == "8f8a3a783164e4978ef3916a808b7bf26624e212"
    assert plan["labels"]["ds41f.base"] == "sha256:" + "ab" * 32
    assert lockfile.load(lock, str(folder))["input_hash"] == plan["input_hash"]  # stable


def test_every_input_moves_the_hash_but_names_do_not(lab):
    folder, lock = lab
    before = lockfile.load(lock, str(folder))["input_hash"]
    assert lockfile.load(dict(lock, image="ds41f-lab:renamed", release="other"), str(folder))["input_hash"] == before
    patch = folder / "patches" / "hello" / "0002-Mark-the-version-as-patched-twice.patch"
    patch.write_text(patch.read_text() + "\n")
    assert lockfile.load(lock, str(folder))["input_hash"] != before
    smoke = dict(lock, smoke=["sh", "-c", "true"])
    assert lockfile.load(smoke, str(folder))["input_hash"] != lockfile.load(lock, str(folder))["input_hash"]


def problems(lock, folder):
    with pytest.raises(lockfile.LockError) as info:
        lockfile.load(lock, str(folder))
    return info.value.problems


def test_short_commits_missing_trees_and_unpinned_bases_are_refused(lab):
    folder, lock = lab
    lock["sources"]["hello"].update(commit="644dcb2a", tree=None)
    lock["base"] = {"ref": "debian:bookworm"}
    found = problems(lock, folder)
    assert any(p.startswith("sources.hello.commit: '644dcb2a' is not a full 40-hex commit") for p in found)
    assert any(p.startswith("sources.hello.tree: None") for p in found)
    assert any(p.startswith("base.ref: 'debian:bookworm' is not pinned by digest") for p in found)
    assert all("Fix:" in p for p in found)


def test_a_series_must_match_the_count_and_be_numbered_without_gaps(lab):
    folder, lock = lab
    series = folder / "patches" / "hello"
    (series / "0002-Mark-the-version-as-patched-twice.patch").rename(series / "0003-Mark.patch")
    lock["sources"]["hello"]["patches"] = 3
    found = problems(lock, folder)
    assert "sources.hello.patches: the lock expects 3 patches, patches/hello/ holds 2." in found[0]
    assert "0003-Mark.patch is patch 2 of the series; number it 0002" in found[1]


def test_the_release_lock_records_the_seeds_and_names_what_they_do_not_pin():
    lock = yaml.safe_load((RELEASE / "lock.yml").read_text())
    found = problems(lock, RELEASE)
    fields = [p.split(":")[0] for p in found]
    assert "base.ref" not in fields  # pinned by the digest spark-ds41f's docker/Dockerfile records
    base = yaml.safe_load((ROOT / "tests" / "fixtures" / "release" / "base-image.yml").read_text())
    assert lock["base"]["ref"] == base["base_image"]
    for source in ("vllm", "tilelang", "tilekernels", "sparknet", "nccl"):
        assert "sources.%s.commit" % source in fields
    assert "sources.vllm.patches" in fields and "sources.tilelang.patches" in fields  # series not vendored
    assert lock["sources"]["vllm"]["commit"] == "19f2c20e" and lock["sources"]["vllm"]["tree"] == "ea1281f8"


def test_jobs_follow_available_memory():
    seeds = dict(lockfile.BUILD_KEYS)  # 8 GiB a job, 24 GiB kept, at most 10, refuse below 64 GiB
    assert lockfile.build_jobs(121 * GIB, 20, seeds)[0] == 10
    assert lockfile.build_jobs(72 * GIB, 20, seeds)[0] == 6
    assert lockfile.build_jobs(72 * GIB, 4, seeds)[0] == 4
    jobs, why = lockfile.build_jobs(50 * GIB, 20, seeds)
    assert jobs == 0 and "needs 64 GiB" in why
