"""bench.md: the verdict in plain words, the tables and the charts a person reads."""

from ds41f.bench import markdown, report


def data(**extra):
    d = {"meta": {"url": "http://127.0.0.1:8000", "model": "m", "started": "2026-12-01T16:00:00Z", "seconds": 12.0,
                  "precision": 0.02, "tolerance_pct": 3.0, "idle_gate": True},
         "method": {"mode": "quick", "samples": "3-4", "skipped": ["concurrency c16: past the 8 sequences of x"]},
         "doctor": {"status": "skipped", "why": "SKIPPED by --skip-doctor: not checked"},
         "identity": {"shape": {"unknown": "no --shape"}, "nodes": {"local": {"kernel": "6.8", "image_id": {
             "unknown": "a process"}}}},
         "points": [{"name": "decode/prose/nothink/c1", "kind": "decode", "metric": "tps", "samples": [{}, {}],
                     "tps": {"mean": 40.0, "ci95": 0.4}, "step_ms": {"mean": 24.5, "ci95": 0.1}}],
         "sampled": [{"name": "sampled/c1", "requests": 4, "tps": {"mean": 30.0, "ci95": None},
                      "acceptance": {"not_available": "not available: no counters"}}],
         "verdict": {"exit": 0, "reason": "no reference to compare with"}}
    d.update(extra)
    return d


def test_a_regression_reads_slower_than_the_reference_first():
    row = {"name": "decode/prose/nothink/c1", "metric": "tps", "current": 40.0, "reference": 82.6,
           "change_pct": -51.6, "ci95_pct": 1.2, "regression": True, "verdict": report.SLOWER,
           "source": "000_72fb2218289d1604.txt:300"}
    text = markdown.render(data(comparison=[row], reference={"label": "seed spark-ds41f-1107, tp4-ring", "notes": []},
                                verdict={"exit": 1, "reason": report.verdict({}, [row])[1]}), ["/r/decode.png"])
    first = text.splitlines()[2]
    assert first == ("**Slower than the reference** (exit 1) against seed spark-ds41f-1107, tp4-ring, 1 reference "
                     "row(s), 1 of them measured: 1 point(s) significantly slower beyond the tolerance: "
                     "decode/prose/nothink/c1.")
    assert "| decode/prose/nothink/c1 | tps | 40.00 | 82.60 | -51.6% ±1.2 | slower than the reference |" in text
    assert "![decode](decode.png)" in text and "| 24.50 |" in text


def test_what_was_not_measured_or_checked_is_said_in_words():
    text = markdown.render(data(), [])
    assert "**Measured, not compared** (exit 0)" in text
    assert "Doctor: **skipped** - SKIPPED by --skip-doctor" in text
    assert "Not measured: concurrency c16: past the 8 sequences of x." in text
    assert "| sampled/c1 | 4 | 30.0 | not available: no counters |" in text
    assert "| shape | unknown (no --shape) |" in text and "not available" in text.split("## Decode")[1]


def test_a_point_not_served_and_another_model_are_in_the_verdict_and_the_table():
    row = dict(report._missing("prefill/source/32768", "prefill_tps", 8508, "000_72fb2218289d1604.txt:304",
                               {"prefill/source/32768": "past the server's 2048-token context"}))
    diffs = [{"field": "model", "run": "ds41f-tiny", "reference": "deepseek-v4.1-flash", "decides": True}]
    text = markdown.render(data(comparison=[row], identity_differences=diffs,
                                reference={"label": "seed spark-ds41f-1107, tp4-ring", "notes": []},
                                verdict={"exit": 1, "reason": report.verdict({}, [row], diffs)[1]}), [])
    first = text.splitlines()[2]
    assert first.startswith("**Slower than the reference** (exit 1)") and "0 of them measured" in first
    assert "cannot serve at all: prefill/source/32768 (past the server's 2048-token context)" in first
    assert "not the reference's system: model ds41f-tiny (reference: deepseek-v4.1-flash)" in first
    assert "| model | ds41f-tiny | deepseek-v4.1-flash | not comparable |" in text
    assert "| prefill/source/32768 | prefill_tps | - | 8508 | - | cannot serve it: past the server's" in text
