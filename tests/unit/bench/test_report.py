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


def test_noise_within_the_interval_is_not_a_regression_and_points_only_this_run_has_are_left_out():
    rows = report.compare([point("a", [95, 105, 90, 110]), point("b", [1, 2])],
                          [point("a", [100, 101, 99, 100])], 3.0)
    assert [r["name"] for r in rows] == ["a"] and not rows[0]["regression"]
    assert report.verdict({}, rows)[0] == report.EXIT_OK


def test_a_point_of_the_reference_run_this_run_lacks_is_never_passed():
    rows = report.compare([point("a", [100, 101, 99, 100])], [point("a", [100, 101, 99, 100]), point("b", [5, 6])],
                          3.0)
    assert [(r["name"], r["verdict"]) for r in rows] == [("a", report.LEVEL), ("b", report.NOT_MEASURED)]
    status, why = report.verdict({}, rows)
    assert status == report.EXIT_REGRESSION and why == (
        "not shown level with the reference: none of the 1 measured row(s) is significantly slower (1 level with "
        "the reference); 1 reference point(s) not measured: b")


def test_a_reference_run_is_compared_on_every_point_it_has():
    data = {"points": [point("decode/prose/nothink/c1", [10, 11])], "sampled": [point("sampled/c1", [9])],
            "prefix": {"asked": 1024, "runs": [{"ttft_s": 0.5}, {"ttft_s": 0.1}, {"ttft_s": 0.1}]}}
    names = {(p["name"], p["metric"]) for p in report.reference_points(data)}
    assert names == {("decode/prose/nothink/c1", "tps"), ("sampled/c1", "tps"), ("prefix/1024", "cold_ttft_s"),
                     ("prefix/1024", "warm_ttft_s")}


def test_a_stopped_run_exits_2_whatever_the_comparison():
    assert report.verdict({"stopped": "the quality gate failed"}, [])[0] == report.EXIT_STOPPED


def test_comparable_notes_differences():
    notes = report.comparable({"meta": {"max_tokens": 24}}, {"meta": {"max_tokens": 256}})
    assert notes == ["max_tokens differs: 24 now, 256 in the reference"]


def test_identity_unknown_on_both_sides_is_no_difference():
    ref = {"identity": {"model": "ds41f-tiny", "shape": {"unknown": "x"}, "release": {"unknown": "y"}}}
    assert report.identity_differences({"model": "ds41f-tiny", "shape": {"unknown": "z"}}, ref) == []
    assert report.identity_differences({"model": "other"}, ref)[0]["decides"]
