"""The manifest and a node's check against it, on a generated checkpoint (tests/checkpoint.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import checkpoint  # noqa: E402  (tests/checkpoint.py: the generator the lab and the bench use too)

REPO, REV = "deepseek-ai/DeepSeek-V4.1-Flash", "1bae0e10"


@pytest.fixture
def ckpt(tmp_path):
    root = checkpoint.write(tmp_path / "ckpt", shards=3, shard_mib=1, seed=7)
    made, hashed = mf.make(str(root), REPO, REV, workers=2)
    return str(root), made, hashed


def shard(root, k=2, n=3):
    return os.path.join(root, "model-%05d-of-%05d.safetensors" % (k, n))


def test_the_generator_is_deterministic(tmp_path):
    a = checkpoint.write(tmp_path / "a", shards=2, shard_mib=1, seed=3)
    b = checkpoint.write(tmp_path / "b", shards=2, shard_mib=1, seed=3)
    c = checkpoint.write(tmp_path / "c", shards=2, shard_mib=1, seed=4)
    digest = [mf.make(str(p), REPO, REV, 1)[0]["digest"] for p in (a, b, c)]
    assert digest[0] == digest[1] != digest[2]


def test_manifest_lists_every_file_with_size_and_sha256(ckpt):
    root, made, hashed = ckpt
    names = [f["path"] for f in made["files"]]
    assert names == sorted(names) and len(names) == 5  # 3 shards, config.json, the index
    assert set(hashed) == set(names)
    entry = made["files"][names.index("config.json")]
    assert entry["size"] == os.path.getsize(os.path.join(root, "config.json"))
    assert entry["sha256"] == mf.sha256_file(os.path.join(root, "config.json"))
    assert made["total_bytes"] == sum(f["size"] for f in made["files"])
    assert mf.validate(made) == []


def test_hub_bookkeeping_and_partial_files_are_not_part_of_it(ckpt):
    root, made, _ = ckpt
    os.makedirs(os.path.join(root, ".cache", "huggingface"))
    Path(root, ".cache", "huggingface", "x.metadata").write_text("etag")
    Path(shard(root) + mf.PART_SUFFIX).write_bytes(b"half")
    again, _ = mf.make(root, REPO, REV, 1)
    assert again["digest"] == made["digest"]


def test_a_clean_copy_checks_out_and_a_record_spares_the_next_read(ckpt):
    root, made, _ = ckpt
    first = mf.check(root, made)
    assert first["problems"] == [] and len(first["hashed"]) == 5
    record = mf.record_of(made, first["ok"])
    second = mf.check(root, made, record)
    assert second["problems"] == [] and second["hashed"] == []
    assert mf.check(root, made, record, full=True)["hashed"] == [f["path"] for f in made["files"]]


def test_missing_short_long_and_corrupt_files_are_named(ckpt):
    root, made, _ = ckpt
    record = mf.record_of(made, mf.check(root, made)["ok"])
    os.unlink(shard(root, 1))
    with open(shard(root, 2), "r+b") as handle:
        handle.truncate(1000)
    with open(shard(root, 3), "r+b") as handle:  # same size, different bytes: only the hash can tell
        handle.seek(4096)
        handle.write(b"\xff" * 8)
    with open(os.path.join(root, "config.json"), "a") as handle:
        handle.write(" ")
    problems = {p["path"]: p for p in mf.check(root, made, record)["problems"]}
    assert problems[os.path.basename(shard(root, 1))]["problem"] == mf.MISSING
    assert problems[os.path.basename(shard(root, 2))]["problem"] == mf.SHORT
    assert problems[os.path.basename(shard(root, 2))]["found_size"] == 1000
    assert problems[os.path.basename(shard(root, 3))]["problem"] == mf.CORRUPT
    assert problems["config.json"]["problem"] == mf.LONG
    assert len(problems) == 4
    assert mf.bytes_needed(made, list(problems.values())) == sum(
        f["size"] for f in made["files"] if f["path"] in problems)
    assert "corrupt" in mf.describe(problems[os.path.basename(shard(root, 3))])


def test_a_record_of_another_manifest_vouches_for_nothing(ckpt):
    root, made, _ = ckpt
    record = mf.record_of(made, mf.check(root, made)["ok"])
    other = dict(made, revision="0000000")
    other["digest"] = mf.digest(other)
    assert len(mf.check(root, other, record)["hashed"]) == 5


def test_a_rewritten_file_is_read_again_even_with_a_record(ckpt):
    root, made, _ = ckpt
    record = mf.record_of(made, mf.check(root, made)["ok"])
    data = Path(shard(root)).read_bytes()
    os.unlink(shard(root))
    Path(shard(root)).write_bytes(data[:-1] + b"\x00")  # a new inode, the same size
    result = mf.check(root, made, record)
    assert result["hashed"] == [os.path.basename(shard(root))]
    assert [p["problem"] for p in result["problems"]] == [mf.CORRUPT]


def test_make_reuses_what_the_record_vouches_for(ckpt):
    root, made, _ = ckpt
    record = mf.record_of(made, mf.check(root, made)["ok"])
    again, hashed = mf.make(root, REPO, REV, 1, record)
    assert hashed == [] and again["digest"] == made["digest"]


def test_extra_files_are_reported_not_judged(ckpt):
    root, made, _ = ckpt
    Path(root, "notes.txt").write_text("mine")
    result = mf.check(root, made)
    assert result["problems"] == [] and result["extra"] == ["notes.txt"]


def test_validate_refuses_paths_outside_the_checkpoint_and_hand_edits(ckpt):
    _, made, _ = ckpt
    escape = dict(made, files=[dict(made["files"][0], path="../etc/passwd")] + made["files"][1:])
    assert "not a relative path" in mf.validate(escape)[0]
    edited = dict(made, files=[dict(made["files"][0], size=1)] + made["files"][1:])
    assert "digest does not match" in mf.validate(edited)[0]
    assert mf.validate({"files": []}) == ["the manifest has no file list"]


def test_free_bytes_walks_up_to_an_existing_folder(tmp_path):
    assert mf.free_bytes(str(tmp_path / "not" / "yet")) == mf.free_bytes(str(tmp_path))
    assert mf.free_bytes("relative/path/that/does/not/exist") > 0


def run_module(tmp_path, name, args, check_mode=False):
    """The module as Ansible runs it on a node: a Python process fed its arguments."""
    root = Path(__file__).resolve().parents[3]
    argfile = tmp_path / ("%s-args.json" % name)
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}))
    done = subprocess.run([sys.executable, str(root / "plugins" / "modules" / (name + ".py")), str(argfile)],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(root / "collections")))
    return json.loads(done.stdout)


@pytest.mark.parametrize("shards, fails", [(3, False), (0, False), (4, True), (2, True)])
def test_the_manifest_module_refuses_another_shard_count_before_writing(tmp_path, ckpt, shards, fails):
    root, _, _ = ckpt
    where = tmp_path / "m.json"
    args = {"path": root, "repo": REPO, "revision": REV, "manifest_path": str(where), "shards": shards}
    got = run_module(tmp_path, "model_manifest", args)
    assert bool(got.get("failed")) == fails and where.exists() != fails
    if fails:
        assert "has 3 safetensors shards; the recipe pins %d" % shards in got["msg"]
        assert "nothing was written" in got["msg"] and "model_shards" in got["msg"]


def test_a_kept_manifest_of_another_shard_count_is_refused_with_its_path(tmp_path, ckpt):
    root, _, _ = ckpt
    where = tmp_path / "m.json"
    args = {"path": root, "repo": REPO, "revision": REV, "manifest_path": str(where)}
    assert run_module(tmp_path, "model_manifest", args)["created"]
    got = run_module(tmp_path, "model_manifest", dict(args, shards=5))
    assert got["failed"] and "delete %s so it is made again" % where in got["msg"]


@pytest.mark.parametrize("reserve_gib, fails", [(0, False), (1 << 20, True)])
def test_the_check_fails_a_node_without_room_for_its_repair(tmp_path, ckpt, reserve_gib, fails):
    root, made, _ = ckpt
    os.remove(shard(root))
    args = {"path": root, "manifest": made, "record_path": str(tmp_path / "rec.json"),
            "reserve_bytes": reserve_gib << 30}
    got = run_module(tmp_path, "model_check", args, check_mode=True)
    assert got["needed_bytes"] > 0 and not got["complete"] and bool(got.get("failed")) == fails
    if fails:
        assert "must receive" in got["msg"] and "Nothing was transferred" in got["msg"]


def test_a_complete_copy_needs_no_room(tmp_path, ckpt):
    root, made, _ = ckpt
    args = {"path": root, "manifest": made, "record_path": str(tmp_path / "rec.json"), "reserve_bytes": 1 << 60}
    got = run_module(tmp_path, "model_check", args, check_mode=True)
    assert got["complete"] and got["needed_bytes"] == 0 and not got.get("failed")


def test_room_is_judged_once_for_the_check_and_the_fetch(tmp_path):
    """manifest.room_shortfall, which model_check (before any transfer) and model_fetch (as it starts) share."""
    free = mf.free_bytes(str(tmp_path))
    assert mf.room_shortfall(str(tmp_path), 0, 1 << 62) is None  # nothing to receive needs no room
    assert mf.room_shortfall(str(tmp_path), 1, 0) is None
    short = mf.room_shortfall(str(tmp_path / "not-yet"), free, 1 << 30)
    assert short.startswith("must receive %.1f GiB into %s and keep 1.0 GiB free" % (free / 2.0 ** 30,
                                                                                    tmp_path / "not-yet"))
    assert "Fix: free space there" in short
