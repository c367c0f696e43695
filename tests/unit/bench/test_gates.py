"""seed 001's quality gates from recorded outputs: the KL gate's arithmetic on the lab engine's real log
probabilities, prefix_scan's drift, qeval's comparison with a reference, and what each says when it cannot
judge."""

import json
import math
from pathlib import Path

import pytest

from ds41f.bench import kl_gate, prefix_scan, qeval

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "bench-logprobs" / "lab-engine-kl-logprobs.json"


def recorded():
    return kl_gate.load_reference(FIXTURE)


def test_a_stack_against_its_own_recording_has_no_divergence_and_passes():
    panels = recorded()
    entries = [dict(e, kl=kl_gate.positions(e["tokens"], e["tokens"])) for e in panels["short"]]
    verdict = kl_gate.judge_panel(entries)
    assert verdict["positions"] == 32 and verdict["mean_kl"] == 0.0 and verdict["passed"]
    assert "within the 0.035 limit (seed 001 line 33)" in verdict["why"]


def test_distributions_that_disagree_fail_the_limit():
    """The 300-token prompt's recording as the reference, the 1500-token prompt's answer as the engine's: two real
    distributions of the tiny model that disagree from the first position, where the greedy tokens part too."""
    panels = recorded()
    ref, other = panels["short"][0]["tokens"], panels["long"][0]["tokens"]
    compared = kl_gate.positions(ref, other)
    assert len(compared) == 1 and ref[0]["token"] != other[0]["token"]  # compared up to where they part
    verdict = kl_gate.judge_panel([{"asked": 300, "kl": compared}])
    assert verdict["passed"] is False and verdict["mean_kl"] > kl_gate.LIMIT
    assert "ABOVE the 0.035 limit" in verdict["why"]
    # the two short prompts share their first greedy tokens: compared further, each position its own KL
    assert len(kl_gate.positions(ref, panels["short"][1]["tokens"])) == 2


def test_kl_is_over_the_tokens_both_lists_hold_renormalized():
    p = {"a": math.log(0.5), "b": math.log(0.25), "c": math.log(0.25)}
    q = {"a": math.log(0.25), "b": math.log(0.5), "x": math.log(0.25)}
    # over {a, b}: p = (2/3, 1/3), q = (1/3, 2/3)
    expected = 2 / 3 * math.log(2) + 1 / 3 * math.log(0.5)
    assert kl_gate.divergence(p, q) == pytest.approx(expected)
    assert kl_gate.divergence({"a": 0.0}, {"b": 0.0}) is None


def test_a_panel_the_server_cannot_serve_is_not_judged_and_says_why():
    verdict = kl_gate.judge_panel([{"asked": 16500, "not_served": "past the server's 2048-token context"}])
    assert verdict["passed"] is None and "16500 tokens: past the server's 2048-token context" in verdict["why"]


def test_a_bad_reference_stack_names_the_flag_and_the_fix(tmp_path):
    bad = tmp_path / "bench.json"
    bad.write_text("{}")
    with pytest.raises(kl_gate.KLReferenceError, match="--kl-reference .*Fix: point it at <report>/outputs/"):
        kl_gate.load_reference(bad)


def test_prefix_scan_passes_only_identical_answers():
    tokens = recorded()["short"][0]["tokens"]
    assert prefix_scan.drift(tokens, tokens) == (0.0, True)
    moved = [dict(t, logprob=t["logprob"] - 0.01) for t in tokens]
    d, same = prefix_scan.drift(tokens, moved)
    assert d == pytest.approx(0.01) and same
    hits = [{"drift": 0.0, "same_tokens": True, "cold_logprobs": True}] * 8
    assert prefix_scan.judge(hits)[0] is True
    passed, why = prefix_scan.judge(hits[:7] + [{"drift": d, "same_tokens": True, "cold_logprobs": True}])
    assert passed is None and "seed 001 gives no limit above 0.0" in why
    assert prefix_scan.judge([{"drift": 0.0, "same_tokens": True, "cold_logprobs": False}])[0] is None


def test_qeval_fails_on_a_task_the_reference_passes(tmp_path):
    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps([{"name": "a", "prompt": "x", "criterion": {"type": "regex", "pattern": "."}},
                                 {"name": "b", "prompt": "y", "criterion": {"type": "regex", "pattern": "."}}]))
    tasks = qeval.load_panel(panel)
    assert qeval.judge(tasks, {"a"}, ({"a"}, ["a", "b"]))[0] is True
    passed, why, lost = qeval.judge(tasks, {"a"}, ({"a", "b"}, ["a", "b"]))
    assert passed is False and lost == ["b"] and why == "misses 1 task(s) the reference passes: b"
    assert qeval.judge(tasks, {"a"}, ({"a"}, ["a", "c"]))[0] is None  # another panel: not judged
    assert qeval.judge(tasks, {"a"}, None)[1] == "not judged: no reference (--qeval-reference)"


def test_a_qeval_panel_without_prompts_fails_naming_the_task(tmp_path):
    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps([{"name": "a", "criterion": {"type": "regex", "pattern": "."}}]))
    with pytest.raises(qeval.PanelError, match="task 1 has no prompt"):
        qeval.load_panel(panel)
