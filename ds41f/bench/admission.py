"""The admission suite: ``--admission-contexts`` (4) cold contexts of ``--admission-tokens`` (64K) each, sent at
once; all must run together without preemption.

Two witnesses say how many ran at once: the engine's /metrics, read every ``POLL_S`` (peak running requests and
KV cache use), and the streams themselves (a stream between its first and last token is being decoded). A poll can
miss a short run or go unanswered while the server is busy; the streams' own times cannot, so the larger count
decides. ``vllm:num_preemptions_total`` before and after says whether the engine preempted any of them. A try
that falls short without a preemption is repeated with fresh contexts, up to ``--overlap-retries`` times.
"""

from __future__ import annotations

import asyncio
import contextlib

from ds41f.bench import client, counters, stats

POLL_S = 0.05


def streaming_at_once(results):
    """The most streams that were between their first and their last token at the same moment."""
    edges = sorted([(r["t_first"], 1) for r in results] + [(r["t_last"], -1) for r in results])
    peak = now = 0
    for _, step in edges:  # at equal times an end sorts before a start: touching is not overlapping
        now += step
        peak = max(peak, now)
    return peak


async def _watch(bench, seen, stop):
    while not stop.is_set():
        m = await bench.metrics()
        if m is not None:
            seen["polls"] += 1
            seen["running"] = max(seen["running"], m.get(counters.RUNNING, 0.0))
            kv = counters.kv_usage(m)
            if kv is not None:
                seen["kv_pct"] = max(seen.get("kv_pct") or 0.0, kv)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), POLL_S)


async def run(bench):
    n = bench.opt("admission_contexts", 4)
    tokens = bench.opt("admission_tokens", 65536)
    out_tokens = bench.opt("admission_output", 128)
    if bench.context is not None and tokens + out_tokens > bench.context:
        why = "one %d-token context with %d output tokens is past the server's %d-token context" % (
            tokens, out_tokens, bench.context)
        bench.log("  admission: %s" % why)
        return {"contexts": n, "asked_tokens": tokens, "output_tokens": out_tokens, "peak_running": 0,
                "at_once": 0, "peak_kv_pct": None, "preemptions": None, "per_stream_tps": None, "passed": False,
                "why": why}
    tries = bench.opt("overlap_retries", 3) + 1
    for attempt in range(1, tries + 1):
        result = await _one_try(bench, n, tokens, out_tokens)
        # A try can fall short without the engine refusing anything: a request that reached the server late (a
        # busy controller, someone else's request) never overlapped the rest. Fresh contexts again, a few times;
        # an engine that cannot hold them all falls short every time. A preemption is never retried.
        if result["passed"] or result["preemptions"] != 0 or attempt == tries:
            break
        bench.log("  admission: try %d of %d: %s; again with fresh contexts" % (attempt, tries, result["why"]))
    result["tries"] = attempt
    bench.log("  admission: %s" % result["why"])
    return result


async def _one_try(bench, n, tokens, out_tokens):
    messages = []
    for _ in range(n):
        bench.offset += 15485863 % 100003  # a fresh stretch of text per context: nothing shares a prefix
        messages.append(await bench.prefill_prompt(tokens))
    bodies = [bench.body(m, out_tokens, False) for m in messages]
    before = await bench.idle() or await bench.metrics()
    seen, stop = {"running": 0.0, "kv_pct": None, "polls": 0}, asyncio.Event()
    watcher = asyncio.ensure_future(_watch(bench, seen, stop))
    try:
        results = await bench.send(bodies)
    finally:
        stop.set()
        await watcher
    after = await bench.metrics()
    preempted = counters.preemptions(before, after) if before and after else None
    streaming = streaming_at_once(results)
    at_once = max(int(seen["running"]), streaming)
    per_stream = [max(r["usage"]["completion_tokens"] - 1, 0) / (r["t_last"] - r["t_first"])
                  for r in results if r["t_last"] > r["t_first"]]
    if preempted is None:
        passed, why = False, "not checked: the engine's /metrics have no %s" % counters.PREEMPTIONS
    elif preempted:
        passed, why = False, "%d preemption(s) while the %d contexts ran" % (preempted, n)
    elif at_once < n:
        why = "at most %d of the %d contexts ran at once (the rest waited; /metrics saw %d running in %d reads, " \
              "the streams overlapped %d)" % (at_once, n, seen["running"], seen["polls"], streaming)
        passed = False
    else:
        passed, why = True, "all %d contexts ran at once, no preemption" % n
    return {"contexts": n, "asked_tokens": tokens, "prompt_tokens": [r["usage"]["prompt_tokens"] for r in results],
            "output_tokens": out_tokens, "peak_running": seen["running"], "metrics_reads": seen["polls"],
            "peak_streaming": streaming, "at_once": at_once, "peak_kv_pct": seen["kv_pct"], "preemptions": preempted,
            "per_stream_tps": stats.mean(per_stream) if per_stream else None,
            "finish_reasons": [r["finish_reason"] for r in results], "passed": passed, "why": why,
            "engine_load_after": list(client.load_of(after)) if after else None}
