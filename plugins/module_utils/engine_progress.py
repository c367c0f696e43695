# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""An engine judged by progress, not by HTTP 200: a short streamed request with a first-token deadline, and the
engine's own counters (requests running; prompt and generated tokens) read before and after it.

A hung collective or kernel leaves /health and /v1/models answering while no token comes. Progress is either
counter moving: a long prefill moves the prompt counter for minutes without a generated token and is not a stall.
Pure Python but for ``probe``'s HTTP calls; the judging is unit-tested from a recorded /metrics."""

from __future__ import annotations

import json
import time

# The series each engine exposes (vLLM's /metrics; SGLang's with --enable-metrics): summed over every label set.
SERIES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "prompt": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
    "generation": ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
    # Tokens of every engine step, prefill chunks included: vLLM adds a prompt's tokens to prompt_tokens_total only
    # once its prefill is done, so a chunked prefill of a long context moves this alone.
    "scheduled": ("vllm:iteration_tokens_total_sum",),
}


def parse(text):
    """{running, waiting, prompt, generation} from Prometheus text (None for a series the engine lacks)."""
    names = {name: key for key, series in SERIES.items() for name in series}
    out = dict.fromkeys(SERIES)
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        key = names.get(name)
        if key is None:
            continue
        try:
            value = float(line.rsplit(" ", 1)[1])
        except (IndexError, ValueError):
            continue
        out[key] = (out[key] or 0.0) + value
    return out


def _n(value):
    return "%d" % value if value is not None else "?"


def judge(before, after, seconds, first_token_s=None, refused=None):
    """{state, ok, seen}: 'answering' (a first token came), 'moving' (no first token yet, but a counter moved:
    prefill or decode under way), 'stalled' (no first token in ``seconds`` and nothing moved: the probe's own
    request was in flight all along, so an engine that served nothing before it hung is a stall too), or
    'refused' (the API turned the request away: not a stall, and no restart mends it)."""
    if first_token_s is not None:
        return {"state": "answering", "ok": True, "seen": "first token in %.1f s" % first_token_s}
    if refused:
        return {"state": "refused", "ok": False, "seen": "the streamed request was refused: %s" % refused}
    before, after = before or {}, after or {}
    moved = {k: (after.get(k) or 0) - (before.get(k) or 0) for k in ("prompt", "generation", "scheduled")}
    running, waiting = after.get("running") or 0, after.get("waiting") or 0
    if any(v > 0 for v in moved.values()):
        return {"state": "moving", "ok": True, "seen": "%s prompt, %s generated and %s scheduled token(s) in %.0f s, "
                "%s running" % (_n(moved["prompt"]), _n(moved["generation"]), _n(moved["scheduled"]), seconds,
                                _n(running))}
    # The counters are the engine's own reports: a hung engine stops reporting, so they show what ran before.
    what = "%s request(s) running" % _n(max(running, 1)) + (", %s waiting" % _n(waiting) if waiting else "")
    counters = "" if after.get("generation") is not None else " (no token counters to read)"
    return {"state": "stalled", "ok": False,
            "seen": "%s, no prompt or generated token in %.0f s%s" % (what, seconds, counters)}


def _metrics(open_url, url, headers):
    try:
        return parse(open_url(url.rstrip("/") + "/metrics", headers=headers, timeout=3, validate_certs=False)
                     .read().decode("utf-8", "replace"))
    except Exception:  # an engine without /metrics: judged by the first token alone
        return None


def first_token(open_url, url, headers, model, deadline_s):
    """(seconds until the first streamed chunk that carries text or None, the API's refusal or None)."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4,
                       "temperature": 0, "stream": True}).encode()
    start = time.monotonic()
    try:
        resp = open_url(url.rstrip("/") + "/v1/chat/completions", data=body, method="POST", timeout=deadline_s,
                        headers=dict(headers, **{"Content-Type": "application/json"}), validate_certs=False)
    except Exception as exc:  # 401, 404 (no such model), refused: the API answered, or nothing listens
        if "timed out" in str(exc).lower():
            return None, None
        return None, str(exc)[:200]
    try:
        for raw in resp:
            if time.monotonic() - start > deadline_s:
                return None, None
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            choices = json.loads(line[5:]).get("choices") or [{}]
            delta = choices[0].get("delta") or {}
            if delta.get("content") or delta.get("reasoning_content") or choices[0].get("text"):
                return time.monotonic() - start, None
    except Exception:  # the read timed out, or the stream broke: no first token
        return None, None
    return None, None


def probe(open_url, url, key, model, deadline_s):
    """The whole look: counters, one streamed request with a first-token deadline, counters again; judged."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    start = time.monotonic()
    before = _metrics(open_url, url, headers)
    took, refused = first_token(open_url, url, headers, model, deadline_s)
    after = _metrics(open_url, url, headers) if took is None else before
    verdict = judge(before, after, time.monotonic() - start, took, refused)
    verdict["counters"] = after
    return verdict
