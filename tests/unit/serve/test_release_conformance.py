"""Every rank of the example sites beside the recorded production launch of its shape and rank
(tests/fixtures/release/): each difference is in the reviewed list, one item per entry, with values and a reason
that are checked here; the list names none that is gone, and the recorded launches are their sources' data."""

import json
import re

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import conformance, launch
from ds41f import release

from .conftest import ROOT
from .release_sites import SITES, launches, site_cluster, site_values

SEEDS = {"000": ROOT.parent / "shared" / "seeds" / "000_72fb2218289d1604.txt",
         "001": ROOT.parent / "shared" / "seeds" / "001_9c6b90048b8892ca.txt"}
# Labels whose value is per rank or a digest: an entry names them without a rendered value.
UNSTATED = ("label ds41f.rank", "label ds41f.recipe", "label ds41f.spec", "label ds41f.shape")


def compare(site, **changes):
    return release.compare(launches(site, **changes))


def unlisted_items(result):
    return {d["item"] for _, _, unlisted, _ in result["ranks"] for d in unlisted}


@pytest.mark.parametrize("site", sorted(SITES))
def test_every_difference_of_every_rank_is_reviewed_and_none_is_stale(site):
    result = compare(site)
    lines, ok = release.report(result)
    assert ok, "\n".join(line for line in lines if "NOT REVIEWED" in line or line.startswith("STALE"))
    assert len(result["ranks"]) == len(site_cluster(site).nodes)
    assert all(listed for _, _, _, listed in result["ranks"])  # the comparison saw the recorded launch at all


def test_entries_name_one_item_never_a_pattern_and_state_their_values():
    for entry in release.reviewed():
        assert "items" not in entry and isinstance(entry["item"], str), entry
        # a device cgroup rule's own text holds a '*'; nothing else may look like a pattern
        assert not re.search(r"[*?\[\]]", entry["item"]) or entry["item"].startswith("docker --device-cgroup-rule ")
        assert entry["engine"] in ("vllm", "sglang") and entry["reason"].strip() and entry["source"].strip()
        assert entry.get("ranks") in (None, "head", "workers")
        assert "recorded" in entry and ("rendered" in entry or entry["item"] in UNSTATED), entry["item"]
        assert entry["cites"], "%s: its reason cites nothing that a test can read" % entry["item"]


def cited_text(cite):
    if "seed" in cite:
        return SEEDS[cite["seed"]].read_text().splitlines()[cite["line"] - 1]
    return (ROOT / cite["file"]).read_text()


def test_every_cited_line_and_file_holds_the_words_the_reason_relies_on():
    cites = {json.dumps(c, sort_keys=True) for e in release.reviewed() for c in e["cites"]}
    assert cites
    for cite in map(json.loads, sorted(cites)):
        text = cited_text(cite)
        assert cite["words"] and all(w in text for w in cite["words"]), (cite, text[:300])


@pytest.mark.parametrize("name", [release.VLLM_CHANGES, release.SGLANG_CHANGES])
def test_every_seed_change_is_one_item_on_a_line_that_says_it(name):
    data = release.fixture(name)
    seed = SEEDS["000" if name == release.VLLM_CHANGES else "001"].read_text().splitlines()
    changes = data["changes"] + [c for shape in (data.get("shapes") or {}).values() for c in shape]
    for change in changes + (data.get("unrecorded") or []):
        line = seed[change["line"] - 1]
        assert change["words"] and all(w in line for w in change["words"]), (change, line)
        assert "*" not in change.get("item", "") or change["item"].startswith("docker --device-cgroup-rule ")


def test_a_change_to_an_item_the_record_lacks_is_refused():
    items = release.recorded("vllm", "tp4-ring", 0)
    with pytest.raises(release.RecordError, match="removes env NO_SUCH, which the record lacks"):
        release.apply(items, [{"item": "env NO_SUCH", "value": None}])
    with pytest.raises(release.RecordError, match="renames env NO_SUCH"):
        release.apply(items, [{"rename": ["env NO_SUCH", "env OTHER"]}])


RECORDED = [("vllm", "tp4-ring", r) for r in range(4)] + [("vllm", "tp3-triangle", r) for r in range(3)] + [
    ("sglang", "tp4-ring", r) for r in range(4)]


@pytest.mark.parametrize(("engine", "shape", "rank"), RECORDED)
def test_each_recorded_item_is_compared(engine, shape, rank):
    """Generated from the record: changing or dropping any one recorded item is a difference of that item."""
    recorded = release.recorded(engine, shape, rank)
    assert conformance.differences(recorded, recorded) == []
    for item, value in recorded.items():
        changed = dict(recorded, **{item: "%s-changed" % value})
        assert [d["item"] for d in conformance.differences(recorded, changed)] == [item]
        dropped = {k: v for k, v in recorded.items() if k != item}
        assert conformance.differences(recorded, dropped) == [{"item": item, "recorded": value, "rendered": None}]


def test_each_rank_has_its_own_recorded_launch():
    """The sources' launchers start the head and the workers differently: the rank flags and --headless
    (spark-ds41f's bin/spark), the name, restart policy, smoke test and memory fraction (the SGLang launcher)."""
    for shape, count in (("tp4-ring", 4), ("tp3-triangle", 3)):
        ranks = [release.recorded("vllm", shape, r) for r in range(count)]
        assert [r["arg --node-rank"] for r in ranks] == [str(r) for r in range(count)]
        assert ["arg --headless" in r for r in ranks] == [False] + [True] * (count - 1)
    head, worker = release.recorded("sglang", "tp4-ring", 0), release.recorded("sglang", "tp4-ring", 2)
    assert (head["docker --name"], worker["docker --name"]) == ("dsv41-head", "dsv41-worker")
    assert head["env SKIP_SMOKE"] == "0" and worker["env SKIP_SMOKE"] == "1" and "env WARMUP" not in worker
    assert worker["env NODE_RANK"] == "2" and worker["mount /models/DeepSeek-V4.1-Flash"].endswith(" ro")
    assert head["entrypoint"] == worker["entrypoint"] == "python3 -u /opt/dsv41/boot.py"
    assert head["arg (positional)"] == "run"
    # a worker rendered like the head is caught on that worker
    specs = launches("ring4")
    specs[1]["words"] = [w for w in specs[1]["words"] if w != "--headless"]
    result = release.compare(specs)
    assert {d["item"] for d in result["ranks"][1][2]} == {"arg --headless"}


def test_the_triangle_is_compared_with_its_own_record():
    tri, ring = release.recorded("vllm", "tp3-triangle", 0), release.recorded("vllm", "tp4-ring", 0)
    assert tri["env NCCL_MAX_NCHANNELS"] == "8" and ring["env NCCL_MAX_NCHANNELS"] == "4"
    assert "env NCCL_ALGO" not in tri and tri["env SPARKNET_ROCE_ALLGATHER_MAX_BYTES"] == "4194304"
    assert tri["arg --prefix-cache-retention-interval"] == "512" and tri["arg --max-model-len"] == "1048576"


def test_a_recipe_change_the_list_does_not_know_fails_naming_the_item():
    values = site_values("ring4")
    args = list(values["serve_args"])
    at = args.index("--mm-processor-cache-gb")
    del args[at:at + 2]
    assert unlisted_items(compare("ring4", serve_args=args)) == {"arg --mm-processor-cache-gb"}
    env = dict(values["serve_env"], SPARK3_ENGRAM_ASYNC="1")
    del env["SPARK_DS41F_ENGRAM_ASYNC"]
    assert unlisted_items(compare("ring4", serve_env=env)) == {"env SPARK3_ENGRAM_ASYNC",
                                                                "env SPARK_DS41F_ENGRAM_ASYNC"}


def test_a_reviewed_item_whose_value_moves_is_no_longer_reviewed():
    """An entry states its values: the same item with another value is a new difference."""
    assert unlisted_items(compare("ring4", serve_image="spark-ds41f:other")) == {"image"}
    env = dict(site_values("ring4-sglang")["serve_env"], SGLANG_ROCE_ALLREDUCE="2")
    assert unlisted_items(compare("ring4-sglang", serve_env=env)) == {"env SGLANG_ROCE_ALLREDUCE"}


def test_a_listed_difference_that_no_rank_shows_is_stale(monkeypatch):
    entries = list(release.reviewed())
    entries.append({"engine": "vllm", "shapes": ["tp4-ring"], "item": "env VLLM_NO_USAGE_STATS", "recorded": None,
                    "rendered": "1", "reason": "r", "source": "s", "cites": []})
    monkeypatch.setattr(release, "reviewed", lambda: entries)
    result = compare("ring4")
    lines, ok = release.report(result)
    assert not ok and [e["item"] for e in result["stale"]] == ["env VLLM_NO_USAGE_STATS"]
    assert any(line.startswith("STALE env VLLM_NO_USAGE_STATS") for line in lines)


def test_the_report_counts_the_reviewed_differences():
    lines, _ = release.report(compare("triangle3"))
    total = sum(len(listed) for _, _, _, listed in compare("triangle3")["ranks"])
    assert lines[-1] == "# %d reviewed differences over 3 ranks" % total and total > 0


def test_the_recorded_launches_keep_their_sources_data():
    profile = release.fixture("spark-ds41f-tp4-ring.json")
    assert profile["serve_args"][0] == "/models"  # the arguments begin with the model: the image runs vllm serve
    assert release.fixture("base-image.yml")["entrypoint"] == ["vllm", "serve"]
    assert re.fullmatch(r"docker\.io/vllm/vllm-openai@sha256:[0-9a-f]{64}", release.fixture("base-image.yml")[
        "base_image"])
    tri = release.fixture("spark-ds41f-tp3-triangle.json")
    assert tri["fabric"]["transport"] == "oneshot-direct" and profile["fabric"]["transport"] == "oneshot-ring4"
    sglang = yaml.safe_load((release.FIXTURES / release.SGLANG_RECORD).read_text())
    assert sglang["entrypoint"] == ["python3", "-u", "/opt/dsv41/boot.py"]
    assert sglang["head"]["command"] == sglang["workers"]["command"] == ["run"]
    source = (release.FIXTURES / "SOURCE.md").read_text()
    for commit in ("a20d52a2b16fc62521f901d1ce8bc1887ab094c2", "6a70c1290c80ecf2e6ae4f5757988e42ec13d6d6",
                   "e0985205caea5a3afd43e88bebb076eeefdec8b5"):
        assert commit in source


def test_the_compare_reads_the_docker_run_line_as_rendered():
    """The image as the line names it (a pinned ID), and the line's own words."""
    ranks = launches("ring4")
    spec = ranks[0]["spec"]
    pinned = "sha256:" + "ab" * 32
    ranks[0]["words"] = launch.docker_run(spec, pinned)
    result = release.compare(ranks)
    assert [(d["item"], d["rendered"]) for d in result["ranks"][0][2]] == [("image", pinned)]
