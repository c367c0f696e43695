"""The seeds' published figures as the default reference, and the comparison against them."""

import re
from pathlib import Path

import pytest

from ds41f.bench import reference, report

SEEDS = Path("/work/shared/seeds")


def test_the_default_reference_holds_the_tp4_release_figures():
    ref = reference.load("seed", "tp4-ring")
    assert ref["set"] == "spark-ds41f-1107" and ref["notes"] == []
    by = {(f.get("point"), f["metric"]): f["value"] for f in ref["figures"]}
    assert by[("decode/*/*/c1", "tps")] == 82.6 and by[("decode/*/*/c16", "tps")] == 272.9
    assert by[("prefill/source/32768", "prefill_tps")] == 8508
    assert reference.load("seed:r5l", "tp3-triangle-4k")["set"] == "r5l"


def test_an_unknown_shape_is_said_and_a_bad_set_names_the_fix():
    ref = reference.load("seed", None)
    assert ref["shape"] == "tp4-ring" and "shape is unknown" in ref["notes"][0]
    with pytest.raises(reference.ReferenceError, match="no such set"):
        reference.load("seed:r99", "tp4-ring")
    with pytest.raises(reference.ReferenceError, match="no figures for shape"):
        reference.load("seed:r5l", "tp4-ring")
    assert reference.load("none", "tp4-ring") is None and reference.load(None, None) is None


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents are not on this machine (/work/shared/seeds)")
def test_every_figure_is_on_the_seed_line_it_names():
    for name, data in reference.seed_data()["sets"].items():
        for shape, figures in data["shapes"].items():
            for f in figures:
                line = (SEEDS / f["seed"]).read_text().splitlines()[f["line"] - 1]
                numbers = {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", line)}
                # as written ("8,508", "62.4 ± 1.2%"), or in thousands ("4.4k")
                assert f["value"] in numbers or f["value"] / 1000 in numbers, (name, shape, f, line)


def point(name, metric, values):
    return {"name": name, "metric": metric, "samples": [{metric: v} for v in values]}


def test_a_run_far_below_the_published_figure_is_slower_than_the_reference():
    ref = reference.load("seed", "tp4-ring")
    points = [point("decode/prose/nothink/c1", "tps", [40.0, 41.0, 40.5]),
              point("decode/prose/nothink/c4", "tps", [90.0, 91.0])]
    rows, info = report.compare_published(points, ref["figures"], 3.0)
    measured = [r for r in rows if r["change_pct"] is not None]
    assert [(r["name"], r["reference"]) for r in measured] == [("decode/prose/nothink/c1", 82.6)]
    assert measured[0]["regression"] and measured[0]["verdict"] == report.SLOWER
    assert measured[0]["source"].endswith(":300")
    # every other figure with a point is a row of its own: c16 was not measured
    c16 = [r for r in rows if r["name"] == "decode/*/*/c16"]
    assert c16 and c16[0]["verdict"] == report.NOT_MEASURED and c16[0]["reference"] == 272.9
    assert len(rows) == len([f for f in ref["figures"] if f.get("point")]) and all(not f.get("point") for f in info)
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and why.startswith("slower than the reference")
    assert "10 reference point(s) not measured: decode/*/*/c8, decode/*/*/c16, prefill/source/32768" in why


def test_a_run_level_at_every_measured_point_is_not_passed_while_reference_points_are_missing():
    """The lab's case: faster where it measured, but figures it did not measure or cannot serve."""
    ref = reference.load("seed", "tp4-ring")
    points = [point("decode/prose/nothink/c%d" % c, "tps", [900.0, 910.0, 905.0]) for c in (1, 8, 16)]
    rows, _ = report.compare_published(points, ref["figures"], 3.0)
    assert not any(r["regression"] for r in rows)
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and why.startswith("not shown level with the reference")
    unmeasured = {"prefill/source/32768": "past the server's 2048-token context"}
    rows, _ = report.compare_published(points, ref["figures"], 3.0, unmeasured)
    served = [r for r in rows if r["name"] == "prefill/source/32768"]
    assert served[0]["verdict"] == report.NOT_SERVED and served[0]["why"] == unmeasured["prefill/source/32768"]
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and why.startswith("slower than the reference")
    assert "cannot serve at all: prefill/source/32768 (past the server's 2048-token context)" in why


def test_a_run_of_another_model_or_shape_is_flagged_and_never_passed():
    ref = reference.load("seed", "tp4-ring")
    assert ref["identity"] == {"model": "deepseek-v4.1-flash", "shape": "tp4-ring", "release": "spark-ds41f-1107"}
    same = {"model": "deepseek-v4.1-flash", "shape": "tp4-ring", "release": "spark-ds41f-1107"}
    assert report.identity_differences(same, ref) == []
    lab = {"model": "ds41f-tiny", "shape": {"unknown": "no --shape"}, "release": "spark-ds41f-1107"}
    diffs = report.identity_differences(lab, ref)
    assert [(d["field"], d["run"], d["reference"], d["decides"]) for d in diffs] == [
        ("model", "ds41f-tiny", "deepseek-v4.1-flash", True), ("shape", "unknown", "tp4-ring", True)]
    level = [dict(report._row("decode/prose/nothink/c1", "tps", [82.6, 82.6], 82.6, 0.0, 0.5, 3.0, "s"))]
    status, why = report.verdict({}, level, diffs)
    assert status == report.EXIT_REGRESSION and why.startswith("not comparable with the reference")
    assert "model ds41f-tiny (reference: deepseek-v4.1-flash)" in why
    # another release is what a qualification compares: named in the verdict, not decisive
    newer = report.identity_differences(dict(same, release="spark-ds41f-1201"), ref)
    status, why = report.verdict({}, level, newer)
    assert status == report.EXIT_OK and "release spark-ds41f-1201 (reference: spark-ds41f-1107)" in why


def test_lower_is_better_for_step_time_and_a_published_interval_widens_the_comparison():
    figures = [{"point": "decode/prose/think/c1", "metric": "step_ms", "value": 31.79, "seed": "s", "line": 1},
               {"point": "decode/prose/think/c1", "metric": "tps", "value": 62.4, "ci95_pct": 1.2, "samples": 3,
                "seed": "s", "line": 2}]
    points = [{"name": "decode/prose/think/c1", "metric": "tps",
               "samples": [{"step_ms": 28.0, "tps": 62.0}, {"step_ms": 28.1, "tps": 62.6}, {"step_ms": 27.9,
                                                                                          "tps": 62.3}]}]
    rows = {r["metric"]: r for r in report.compare_published(points, figures, 3.0)[0]}
    assert rows["step_ms"]["verdict"] == report.FASTER and not rows["step_ms"]["regression"]
    assert rows["tps"]["verdict"] == report.LEVEL and rows["tps"]["ci95_pct"] > 1.0


def test_prefix_admission_and_memory_are_points_a_figure_can_name():
    data = {"prefix": {"asked": 32768, "runs": [{"ttft_s": 7.0}, {"ttft_s": 0.3}, {"ttft_s": 0.1}]},
            "admission": {"per_stream_tps": 10.0, "peak_kv_pct": 20.0},
            "memory": {"nodes": {"dgx1": {"min_available_gib": 6.0}}}}
    points = {p["name"]: p["samples"][0] for p in report.comparable_points(data)}
    assert points["prefix/32768"] == {"cold_ttft_s": 7.0, "warm_ttft_s": 0.2}
    assert points["admission"]["per_stream_tps"] == 10.0 and points["memory/dgx1"] == {"min_available_gib": 6.0}
    figures = reference.load("seed", "tp3-triangle-4k")["figures"]
    rows, _ = report.compare_published(report.comparable_points(data), figures, 3.0)
    measured = [r for r in rows if r["change_pct"] is not None]
    assert {r["name"] for r in measured} == {"prefix/32768", "admission", "memory/dgx1"}
    assert all(r["verdict"] == report.NOT_JUDGED for r in measured)  # one sample each: no interval, no regression
