"""Every rank of the example sites beside the recorded production launch of its shape (tests/fixtures/release/):
each difference is in the reviewed list with its reason and source, and the list names none that is gone."""

import copy
import re

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import conformance, launch
from ds41f import release

from .conftest import ROOT
from .release_sites import SITES, rendered, site_cluster, site_values
from .test_launch import node_vars

SEED_000 = ROOT.parent / "shared" / "seeds" / "000_72fb2218289d1604.txt"


@pytest.mark.parametrize("site", sorted(SITES))
def test_every_difference_of_every_rank_is_reviewed_and_none_is_stale(site):
    specs, env_files = rendered(site)
    result = release.compare(specs, env_files)
    lines, ok = release.report(result)
    assert ok, "\n".join(line for line in lines if "NOT REVIEWED" in line or line.startswith("STALE"))
    assert len(result["ranks"]) == len(specs) == len(site_cluster(site).nodes)
    assert all(listed for _, _, _, listed in result["ranks"])  # the comparison saw the recorded launch at all


def site_with(site, **changes):
    """The site's specs and env files after changing recipe variables."""
    values, c = site_values(site), site_cluster(site)
    values.update(changes)
    recipe, shape = launch.recipe_from_vars(values), c.groupvars()["spark_shape"]
    return [launch.render(recipe, shape, node_vars(c, n.name), {"nodes": len(c.nodes), "head_address": c.head.address})
            for n in c.nodes]


def unlisted_items(specs, env_files=None):
    return {d["item"] for _, _, unlisted, _ in release.compare(specs, env_files)["ranks"] for d in unlisted}


def test_a_recipe_change_the_list_does_not_know_fails_naming_the_item():
    values = site_values("ring4")
    args = [a for a in values["serve_args"]]
    at = args.index("--mm-processor-cache-gb")
    del args[at:at + 2]
    specs = site_with("ring4", serve_args=args)
    _, env_files = rendered("ring4")
    assert unlisted_items(specs, env_files) == {"arg --mm-processor-cache-gb"}
    env = dict(values["serve_env"], SPARK3_ENGRAM_ASYNC="1")
    del env["SPARK_DS41F_ENGRAM_ASYNC"]
    assert unlisted_items(site_with("ring4", serve_env=env), env_files) == {
        "env SPARK3_ENGRAM_ASYNC", "env SPARK_DS41F_ENGRAM_ASYNC"}


def test_a_listed_difference_that_no_rank_shows_is_stale(monkeypatch):
    entries = copy.deepcopy(release.reviewed())
    entries.append({"engine": "vllm", "shapes": ["tp4-ring"], "item": "env VLLM_NO_USAGE_STATS", "reason": "r",
                    "source": "s"})
    monkeypatch.setattr(release, "reviewed", lambda: entries)
    specs, env_files = rendered("ring4")
    result = release.compare(specs, env_files)
    lines, ok = release.report(result)
    assert not ok and [e["item"] for e in result["stale"]] == ["env VLLM_NO_USAGE_STATS"]
    assert any(line.startswith("STALE env VLLM_NO_USAGE_STATS") for line in lines)


def test_every_entry_gives_its_reason_and_source():
    for entry in release.reviewed():
        assert set(entry) >= {"engine", "shapes", "reason", "source"} and ("item" in entry) != ("items" in entry)
        assert entry["engine"] in ("vllm", "sglang") and entry["reason"].strip() and entry["source"].strip()


@pytest.mark.parametrize("shape", ["tp4-ring", "tp3-triangle"])
def test_each_recorded_item_is_compared(shape):
    """Generated from the record: changing or dropping any one recorded item is a difference of that item."""
    recorded = release.recorded("vllm", shape)
    assert conformance.differences(recorded, recorded) == []
    for item, value in recorded.items():
        changed = dict(recorded, **{item: "%s-changed" % value})
        assert [d["item"] for d in conformance.differences(recorded, changed)] == [item]
        dropped = {k: v for k, v in recorded.items() if k != item}
        assert conformance.differences(recorded, dropped) == [{"item": item, "recorded": value, "rendered": None}]


def test_the_1030_changes_are_seed_000s_lines():
    """Each change that sets a value names a line of seed 000 that holds the value or the item's name (or says why
    its value is written differently there)."""
    lines = SEED_000.read_text().splitlines()
    data = yaml.safe_load((release.FIXTURES / "spark-ds41f-1030.yml").read_text())
    changes = data["changes"] + [c for shape in data["shapes"].values() for c in shape] + data["unrecorded"]
    for change in changes:
        if change.get("line") is None:
            assert "base-image" in change["source"]
            continue
        text = lines[change["line"] - 1].replace(",", "")
        if change.get("why") or "*" in change.get("item", "*") or change.get("value") is None:
            continue
        name = change.get("item", "").split(" ", 1)[-1]
        words = str(change["value"]).replace(",", "").split()
        assert all(w in text for w in words) or name in text, (change, text)


def test_the_recorded_ring_profile_keeps_the_launch_as_spark_ds41f_wrote_it():
    profile = release.fixture("spark-ds41f-tp4-ring.json")
    assert profile["serve_args"][0] == "/models"  # the arguments begin with the model: the image runs vllm serve
    assert release.fixture("base-image.yml")["entrypoint"] == ["vllm", "serve"]
    assert re.fullmatch(r"docker\.io/vllm/vllm-openai@sha256:[0-9a-f]{64}", release.fixture("base-image.yml")[
        "base_image"])
