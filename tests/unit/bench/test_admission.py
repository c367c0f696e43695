"""How many contexts ran at once, counted from the streams' own first and last token times."""

import asyncio

from ds41f.bench import admission


def _r(first, last):
    return {"t_first": first, "t_last": last}


def test_four_streams_that_overlap_count_four_and_a_waiting_one_does_not():
    assert admission.streaming_at_once([_r(0, 10), _r(1, 11), _r(2, 9), _r(3, 12)]) == 4
    # two slots: the third and fourth start only when the first two have ended
    assert admission.streaming_at_once([_r(0, 5), _r(0.5, 5.5), _r(5, 9), _r(5.5, 10)]) == 2


def test_a_stream_that_starts_as_another_ends_is_not_overlapping():
    assert admission.streaming_at_once([_r(0, 5), _r(5, 9)]) == 1
    assert admission.streaming_at_once([]) == 0


class _Bench:
    context = None

    def __init__(self, retries):
        self.retries, self.lines = retries, []

    def opt(self, name, default):
        return self.retries if name == "overlap_retries" else default

    def log(self, line):
        self.lines.append(line)


def _tries(monkeypatch, outcomes, retries=3):
    """Run the suite with each try's outcome given: (passed, preemptions)."""
    left = list(outcomes)

    async def one_try(bench, n, tokens, out_tokens):
        passed, preempted = left.pop(0)
        return {"passed": passed, "preemptions": preempted, "why": "try %d" % (len(outcomes) - len(left))}

    monkeypatch.setattr(admission, "_one_try", one_try)
    bench = _Bench(retries)
    return asyncio.run(admission.run(bench)), bench.lines


def test_a_try_that_fell_short_is_repeated_and_a_later_full_one_passes(monkeypatch):
    result, lines = _tries(monkeypatch, [(False, 0), (True, 0)])
    assert result["passed"] and result["tries"] == 2
    assert lines == ["  admission: try 1 of 4: try 1; again with fresh contexts", "  admission: try 2"]


def test_an_engine_that_never_holds_them_all_fails_after_every_try_and_a_preemption_is_not_retried(monkeypatch):
    result, _ = _tries(monkeypatch, [(False, 0)] * 3, retries=2)
    assert not result["passed"] and result["tries"] == 3
    result, _ = _tries(monkeypatch, [(False, 1), (True, 0)])
    assert not result["passed"] and result["tries"] == 1 and result["preemptions"] == 1
    result, _ = _tries(monkeypatch, [(False, None), (True, 0)])  # /metrics without the counter: not checked
    assert not result["passed"] and result["tries"] == 1
