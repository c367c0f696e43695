"""The KL gate of seed 001 (its ``ds_gate.py kld``): the engine's next-token distributions along a greedy
continuation against those of a reference stack, on a long and a short panel of prompts.

From the seed (001_9c6b90048b8892ca.txt): "greedy-continuation KL against a reference stack, long and short
panels" (line 111); "mean 0.0045 over 239 positions (long prompts, 16.5k-40k) and 0.0061 over 559 positions
(short, 1-3k), PASS against the 0.035 limit" (line 33). What the seed leaves open is this project's choice and
listed in docs/bench.md: the prompts (the prefill text, one prompt at each end of a panel's range), the
continuation's length (``--kl-tokens``), K (20, the most ``top_logprobs`` the OpenAI API allows), the direction
KL(reference || engine), and the tail outside the top-K lists (left out: both distributions are renormalized over
the tokens both lists hold).

The reference stack is an earlier run's ``outputs/kl-logprobs.json`` (``--kl-reference``): its prompts are sent
again word for word, and every position up to and including the first where the two greedy continuations part
is compared. Every run writes its own file, so a qualified release is the next one's reference.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ds41f.bench import client, stats

LIMIT = 0.035  # seed 001 line 33: "PASS against the 0.035 limit"
PANELS = {"long": (16500, 40000), "short": (1000, 3000)}  # seed 001 line 33: "16.5k-40k", "1-3k"
TOP = 20  # the OpenAI API's top_logprobs maximum (the seed does not give K)
FILE = "kl-logprobs.json"


class KLReferenceError(ValueError):
    """A reference stack file that cannot be used; the message says which and the fix."""


def load_reference(path):
    try:
        data = json.loads(Path(path).read_text())
        panels = data["panels"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KLReferenceError("--kl-reference %s: not a %s of an earlier run (%s). Fix: point it at "
                               "<report>/outputs/%s" % (path, FILE, exc, FILE)) from exc
    return panels


def divergence(ref_top, run_top):
    """KL(reference || run) over the tokens both top-K lists hold, each renormalized there; None without any."""
    common = set(ref_top) & set(run_top)
    if not common:
        return None
    p = {t: math.exp(ref_top[t]) for t in common}
    q = {t: math.exp(run_top[t]) for t in common}
    zp, zq = sum(p.values()), sum(q.values())
    return sum(p[t] / zp * math.log((p[t] / zp) / (q[t] / zq)) for t in common)


def positions(ref_tokens, run_tokens):
    """KL per position along the two greedy continuations, up to and including the first where they part."""
    out = []
    for r, c in zip(ref_tokens, run_tokens, strict=False):
        out.append(divergence(r["top"], c["top"]))
        if r["token"] != c["token"]:
            break
    return [x for x in out if x is not None]


def judge_panel(entries):
    values = [x for e in entries for x in e.get("kl", [])]
    if not values:
        why = "; ".join("%d tokens: %s" % (e["asked"], e["not_served"]) for e in entries if e.get("not_served"))
        return {"positions": 0, "mean_kl": None, "passed": None, "why": "not judged: no position compared%s" % (
            " (%s)" % why if why else "")}
    m = stats.mean(values)
    return {"positions": len(values), "mean_kl": m, "max_kl": max(values), "passed": m <= LIMIT,
            "why": "mean %.4f over %d positions %s the %.3f limit (seed 001 line 33)" % (
                m, len(values), "within" if m <= LIMIT else "ABOVE", LIMIT)}


def request_body(bench, messages, tokens):
    """A greedy continuation with the top-K log probabilities (client.chat_logprobs adds logprobs and stream)."""
    return dict(bench.body(messages, tokens, False, fixed=False), top_logprobs=TOP)


async def run(bench):
    tokens = bench.opt("kl_tokens", 32)
    ref_path = bench.opt("kl_reference", None)
    reference = load_reference(ref_path) if ref_path else None
    lengths = {"long": bench.opt("kl_long_lengths", list(PANELS["long"])),
               "short": bench.opt("kl_short_lengths", list(PANELS["short"]))}
    record, panels = {"model": bench.model, "url": bench.url, "top": TOP, "panels": {}}, {}
    for panel in ("long", "short"):
        items = reference.get(panel, []) if reference is not None else [{"asked": n} for n in lengths[panel]]
        entries = []
        for item in items:
            asked = item["asked"]
            if bench.context is not None and asked + tokens > bench.context:
                entries.append({"asked": asked, "not_served": "past the server's %d-token context" % bench.context})
                continue
            if "tokens" not in item and reference is not None:
                entries.append({"asked": asked, "not_served": "the reference stack could not serve it either"})
                continue
            messages = item.get("messages") or await bench.prefill_prompt(asked)
            body = request_body(bench, messages, tokens)
            await bench.idle()
            bench.requests += 1
            result = await client.chat_logprobs(bench.url, body, bench.o.request_timeout, bench.o.api_key)
            entry = {"asked": asked, "messages": messages, "prompt_tokens": result["usage"].get("prompt_tokens"),
                     "tokens": result["tokens"]}
            if reference is not None:
                entry["kl"] = positions(item["tokens"], result["tokens"])
            entries.append(entry)
        record["panels"][panel] = entries
        if reference is None:
            panels[panel] = {"positions": 0, "mean_kl": None, "passed": None,
                             "why": "not judged: no reference stack (--kl-reference)"}
        else:
            panels[panel] = judge_panel(entries)
        bench.log("  kl %s panel: %s" % (panel, panels[panel]["why"]))
    out_dir = Path(bench.opt("output_dir", ".")) / "outputs"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / FILE).write_text(json.dumps(record))
    verdicts = [p["passed"] for p in panels.values()]
    passed = False if False in verdicts else (True if all(verdicts) else None)
    return {"reference": ref_path, "tokens": tokens, "top": TOP, "limit": LIMIT, "panels": panels,
            "passed": passed, "logprobs": str(out_dir / FILE),
            "why": why(passed, reference is not None, panels)}


def why(passed, referenced, panels):
    if not referenced:
        return "not judged: no reference stack (--kl-reference); this run's logprobs are outputs/%s" % FILE
    named = {v: ", ".join(n for n, p in panels.items() if p["passed"] is v) for v in (False, None)}
    return {True: "every panel within the %.3f limit" % LIMIT,
            False: "above the %.3f limit: %s" % (LIMIT, named[False]), None: "not judged on %s" % named[None]}[passed]
