"""Comparison with a reference run and the bench's exit status."""

from ds41f.bench import report


def point(name, values, metric="tps"):
    return {"name": name, "metric": metric, "samples": [{metric: v} for v in values]}


def test_a_reference_faster_beyond_the_tolerance_is_a_regression():
    rows = report.compare([point("decode/prose/nothink/c1", [90, 91, 89, 90])],
                          [point("decode/prose/nothink/c1", [100, 101, 99, 100])], 3.0)
    assert rows[0]["regression"] and rows[0]["change_pct"] < -9
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and "decode/prose/nothink/c1" in why


def test_noise_within_the_interval_is_not_a_regression_and_unmatched_points_are_left_out():
    rows = report.compare([point("a", [95, 105, 90, 110]), point("b", [1, 2])],
                          [point("a", [100, 101, 99, 100])], 3.0)
    assert [r["name"] for r in rows] == ["a"] and not rows[0]["regression"]
    assert report.verdict({}, rows)[0] == report.EXIT_OK


def test_a_stopped_run_exits_2_whatever_the_comparison():
    assert report.verdict({"stopped": "the quality gate failed"}, [])[0] == report.EXIT_STOPPED


def test_comparable_notes_differences():
    notes = report.comparable({"meta": {"model": "a", "max_tokens": 256}}, {"meta": {"model": "b", "max_tokens": 256}})
    assert notes == ["model differs: a now, b in the reference"]
