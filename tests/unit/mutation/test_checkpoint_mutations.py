"""The mutation test's checkpoint files, without a lab: on a real checkpoint folder, the objects the model stage
declares (model_fetch's ``managed``) get every change the harness has for their kind, run as the shell commands it
sends a node; each change is named by exactly one doctor row carrying that object (model_check and model_fetch as
the doctor runs them, folded as the doctor folds), and the quick doctor misses exactly the changes marked DEEP."""

import os
import shutil
import subprocess

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, scrub
from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from tests import checkpoint
from tests.mutation import doctor_mutations as dm
from tests.unit.model.test_model_scrub import run_module

NODE = "dgx3"
KIND = "checkpoint file"
CHANGES = dm.MUTATIONS[KIND]


@pytest.fixture
def node(tmp_path):
    """A node's verified copy (manifest copy, record), and the pristine bytes to put back between changes."""
    pristine = str(checkpoint.write(tmp_path / "pristine", shards=2, shard_mib=1, seed=7))
    made, _ = mf.make(pristine, "r", "0123456", 2)
    out = {"root": str(tmp_path / "ckpt"), "made": made, "pristine": pristine, "record": str(tmp_path / "rec.json"),
           "manifest": str(tmp_path / "manifest.json"), "state": str(tmp_path / "scrub.json")}
    mf.write_atomic(out["manifest"], mf.dump_json(made))
    restore(out)
    return out


def restore(node):
    """The copy as the model stage leaves it: every file verified, no scrub result yet."""
    shutil.rmtree(node["root"], ignore_errors=True)
    shutil.copytree(node["pristine"], node["root"])
    verified = mf.check(node["root"], node["made"])["ok"]
    mf.write_atomic(node["record"], mf.dump_json(mf.record_of(node["made"], verified)))
    if os.path.exists(node["state"]):
        os.unlink(node["state"])


def stage(node):
    """The model stage's check and mend in check mode, as the doctor runs them on the node: (check, fetch)."""
    check = run_module("model_check", {"path": node["root"], "manifest": node["made"], "record_path": node["record"],
                                       "scrub_state": node["state"], "scrub_period_s": 604800})
    fetch = run_module("model_fetch", {"path": node["root"], "manifest": node["made"], "check": check,
                                       "manifest_path": node["manifest"], "record_path": node["record"],
                                       "node": NODE, "origin": "controller via dgx1"})
    return check, fetch


def doctor_rows(node, deep):
    """The doctor's rows on this node: ``deep`` scrubs the copy first (ds41f doctor --deep), as the scrub program
    does, and the stage's check reads its result."""
    if deep:
        scrub.write(node["state"], scrub.scrub(node["root"], node["made"], mf.load_json(node["record"])))
    check, fetch = stage(node)
    return drift.dedupe(drift.rows_from_result(NODE, "model", "Check this node's copy", check)
                        + drift.rows_from_result(NODE, "model", "Mend this node's copy", fetch))


def sh(script):
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_stage_declares_every_file_of_its_manifest_with_its_size(node):
    check, fetch = stage(node)
    assert check["drift"] == [] and fetch["drift"] == []
    assert fetch["managed"] == [{"kind": KIND, "name": os.path.join(node["root"], e["path"]), "size": e["size"]}
                                for e in node["made"]["files"]]
    assert all(m[1](o) for o in fetch["managed"] for m in CHANGES)  # every change applies to every file
    assert [m[0] for m in CHANGES] == [dm.KEPT_STAT, "truncated", "deleted"]


@pytest.mark.parametrize("change", CHANGES, ids=[m[0] for m in CHANGES])
def test_each_change_of_every_declared_file_is_one_row_and_only_the_deep_doctor_sees_the_kept_stat(node, change):
    """Every declared file changed at once (each its own object): READ reads each as changed, the doctor names each
    in exactly one row whose fix is the model stage's run, and no other row; the quick doctor names each too,
    unless the change is one only the deep doctor sees."""
    objects = [dict(o, node=NODE, stage="model") for o in stage(node)[1]["managed"]]
    before = sh(dm.read_script(objects)).splitlines()
    stats = {o["name"]: mf.stat_key(o["name"]) for o in objects}
    for o in objects:
        sh(change[2](o))
    after = sh(dm.read_script(objects)).splitlines()
    assert len(after) == len(before) == len(objects)
    assert all(a != b for a, b in zip(after, before, strict=True)), after
    if change[0] == dm.KEPT_STAT:  # what the node's record vouches for is kept: only the bytes differ
        assert {o["name"]: mf.stat_key(o["name"]) for o in objects} == stats
        assert [line.split()[1] for line in after] == [line.split()[1] for line in before]  # READ's size
    deep = (KIND, change[0]) in dm.DEEP
    for rows, sees in ((doctor_rows(node, deep=False), not deep), (doctor_rows(node, deep=True), True)):
        for o in objects:
            mine = [r for r in rows if dm.names(r, dm.named(o, change))]
            assert len(mine) == (1 if sees else 0), (o["name"], rows)
            assert all(dm.repair_stage(r, "model")[:2] == ("model", ()) for r in mine)
        assert not any(dm.generic(r) for r in rows)
        assert all(any(dm.names(r, o) for o in objects) for r in rows), rows  # no other row
    restore(node)
    assert sh(dm.read_script(objects)).splitlines() == before
