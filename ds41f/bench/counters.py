"""What the engine's own counters (/metrics, Prometheus text) say about a stretch of the run.

Speculative decoding: vLLM counts verification steps (``vllm:spec_decode_num_drafts_total``), the draft tokens
they verified (``..._num_draft_tokens_total``) and the tokens accepted (``..._num_accepted_tokens_total``,
also split by draft position in ``..._num_accepted_tokens_per_pos_total``). An engine without speculative
decoding has none of these series: its acceptance is "not available", never 0.
"""

from __future__ import annotations

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
PREEMPTIONS = "vllm:num_preemptions_total"
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # the newer name first
RUNNING = "vllm:num_requests_running"
NOT_AVAILABLE = ("not available: the engine exposes no speculative-decoding counters (%s), so it runs "
                 "without speculative decoding" % DRAFTS)


def speculative(metrics):
    """True when the engine has speculative-decoding counters."""
    return DRAFTS in metrics


def accepted(metrics):
    """Accepted draft tokens: the total counter, else the sum over draft positions (older builds)."""
    if ACCEPTED in metrics:
        return metrics[ACCEPTED]
    return metrics.get(ACCEPTED_PER_POS)


def acceptance(before, after):
    """Acceptance between two scrapes: {accepted_per_step, tokens_per_step, accepted_per_verified, drafts} or
    {"not_available": why}."""
    if before is None or after is None:
        return {"not_available": "not available: the engine's /metrics could not be read"}
    if not (speculative(before) and speculative(after)):
        return {"not_available": NOT_AVAILABLE}
    drafts = after[DRAFTS] - before[DRAFTS]
    got = (accepted(after) or 0.0) - (accepted(before) or 0.0)
    if drafts <= 0:
        return {"not_available": "not available: no verification step ran in this stretch (%s did not move)"
                % DRAFTS}
    out = {"drafts": drafts, "accepted_per_step": got / drafts, "tokens_per_step": 1.0 + got / drafts}
    if DRAFT_TOKENS in after and DRAFT_TOKENS in before and after[DRAFT_TOKENS] > before[DRAFT_TOKENS]:
        out["accepted_per_verified"] = got / (after[DRAFT_TOKENS] - before[DRAFT_TOKENS])
    return out


def preemptions(before, after):
    """Preemptions between two scrapes; None where the engine does not count them."""
    if PREEMPTIONS not in before or PREEMPTIONS not in after:
        return None
    return after[PREEMPTIONS] - before[PREEMPTIONS]


def kv_usage(metrics):
    """KV cache use in percent; None where the engine does not report it."""
    for name in KV_USAGE:
        if name in metrics:
            return 100.0 * metrics[name]
    return None
