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
    rows, unmatched = report.compare_published(points, ref["figures"], 3.0)
    assert [(r["name"], r["reference"]) for r in rows] == [("decode/prose/nothink/c1", 82.6)]
    assert rows[0]["regression"] and rows[0]["verdict"] == report.SLOWER and rows[0]["source"].endswith(":300")
    assert any(f["value"] == 272.9 for f in unmatched)  # c16 was not measured
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and why.startswith("slower than the reference")


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
    from ds41f.bench import cli

    data = {"prefix": {"asked": 32768, "runs": [{"ttft_s": 7.0}, {"ttft_s": 0.3}, {"ttft_s": 0.1}]},
            "admission": {"per_stream_tps": 10.0, "peak_kv_pct": 20.0},
            "memory": {"nodes": {"dgx1": {"min_available_gib": 6.0}}}}
    points = {p["name"]: p["samples"][0] for p in cli.comparable_points(data)}
    assert points["prefix/32768"] == {"cold_ttft_s": 7.0, "warm_ttft_s": 0.2}
    assert points["admission"]["per_stream_tps"] == 10.0 and points["memory/dgx1"] == {"min_available_gib": 6.0}
    figures = reference.load("seed", "tp3-triangle-4k")["figures"]
    rows, _ = report.compare_published(cli.comparable_points(data), figures, 3.0)
    assert {r["name"] for r in rows} == {"prefix/32768", "admission", "memory/dgx1"}
    assert all(r["verdict"] == report.NOT_JUDGED for r in rows)  # one sample each: no interval, never a regression
