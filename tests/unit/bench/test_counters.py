"""Acceptance, preemptions and KV use from the engine's counters, parsed from recorded /metrics
(tests/fixtures/bench-metrics/SOURCE.md)."""

from pathlib import Path

from ds41f.bench import client, counters, runner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "bench-metrics"


def scrape(name):
    return client.parse_metrics((FIXTURES / name).read_text())


def test_the_lab_engine_has_no_speculative_decoding_so_acceptance_is_not_available_never_zero():
    m = scrape("lab-engine-vllm-0.32.0-cpu.txt")
    assert not counters.speculative(m)
    got = counters.acceptance(m, m)
    assert got == {"not_available": counters.NOT_AVAILABLE} and "accepted_per_step" not in got
    assert counters.preemptions(m, m) == 0.0 and counters.kv_usage(m) == 0.0


def test_spec_decode_counters_sum_over_engines_and_skip_created_timestamps():
    m = scrape("vllm-pr24049-spec-decode-dp8.txt")
    assert counters.speculative(m)
    assert m[counters.DRAFTS] == 22 + 15 + 29 + 20 + 25 + 24 + 27 + 26
    assert counters.accepted(m) == 7  # no total in this scrape: the per-position series stands in
    assert m["vllm:spec_decode_num_drafts_created"] > 1.7e9  # its own series, never added to the counter
    assert counters.acceptance(m, m)["not_available"].startswith("not available: no verification step ran")


def test_acceptance_between_two_scrapes():
    before = {counters.DRAFTS: 100.0, counters.DRAFT_TOKENS: 500.0, counters.ACCEPTED: 150.0}
    after = {counters.DRAFTS: 140.0, counters.DRAFT_TOKENS: 700.0, counters.ACCEPTED: 250.0}
    got = counters.acceptance(before, after)
    assert got["accepted_per_step"] == 2.5 and got["tokens_per_step"] == 3.5
    assert got["accepted_per_verified"] == 0.5 and got["drafts"] == 40
    assert counters.acceptance(None, after)["not_available"].startswith("not available")


def test_step_time_uses_tokens_per_step():
    wave = [{"t_send": 0.0, "t_first": 1.0, "t_last": 2.0, "usage": {"completion_tokens": 101},
             "finish_reason": "length"}]
    plain = runner.decode_metrics(wave, {"not_available": counters.NOT_AVAILABLE})
    assert plain["step_ms"] == 10.0 and "accepted_per_step" not in plain  # 100 steps of one token in 1 s
    spec = runner.decode_metrics(wave, {"accepted_per_step": 1.5, "tokens_per_step": 2.5})
    assert spec["step_ms"] == 25.0 and spec["accepted_per_step"] == 1.5  # 40 steps of 2.5 tokens
    assert spec["derived_tps"] == 100.0
    assert "step_ms" not in runner.decode_metrics(wave, {"not_available": "not available: /metrics unreadable"})
