"""bench.md: the report a person reads, beside bench.json: the verdict in plain words first, then what was
measured (identity, method), every suite's table, the comparison with the reference, and the charts."""

from __future__ import annotations

from ds41f.bench import report


def _fmt(x, digits=1):
    if x is None:
        return "-"
    if isinstance(x, dict):
        return "unknown (%s)" % x.get("unknown", x)
    if isinstance(x, float):
        return "%.*f" % (digits, x)
    return str(x)


def _metric(point, name, digits=1, pct=False):
    m = point.get(name)
    if not m:
        return "-"
    text = "%.*f" % (digits, m["mean"])
    if pct and m.get("ci95") is not None and m["mean"]:
        text += " ±%.1f%%" % (100 * m["ci95"] / abs(m["mean"]))
    return text


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def verdict_words(data):
    status, why = data["verdict"]["exit"], data["verdict"]["reason"]
    rows = data.get("comparison") or []
    ref = (data.get("reference") or {}).get("label")
    if status == report.EXIT_STOPPED:
        return "**Stopped** (exit 2): %s. What was measured before the stop is below." % why
    if not rows and not data.get("identity_differences"):
        return "**Measured, not compared** (exit 0): no reference was given (`--compare` takes the seeds' figures)."
    head = next((h for h in report.HEADS if why.startswith(h)), why)
    detail = why[len(head):].lstrip(":; ") or "no compared point is significantly slower by more than the %.0f%% " \
                                              "tolerance" % data["meta"]["tolerance_pct"]
    measured = [r for r in rows if r["change_pct"] is not None]
    return "**%s** (exit %d) against %s, %d reference row(s), %d of them measured: %s." % (
        head[0].upper() + head[1:], status, ref, len(rows), len(measured), detail)


def _judged(passed):
    return {True: "**passed**", False: "**FAILED**", None: "not judged"}[passed]


def gates(data):
    """seed 001's quality gates: one line each, then the KL panels and the prefix_scan hits."""
    rows = [(name, _judged(data[name]["passed"]), data[name]["why"]) for name in ("qeval", "kl", "tscan",
                                                                                  "prefix_scan") if data.get(name)]
    if not rows:
        return []
    lines = ["## Quality gates (seed 001)", ""] + _table(["gate", "result", "why"], rows)
    q = data.get("qeval") or {}
    if q.get("scores"):
        lines += ["qeval scores per run: %s of %d tasks." % (" / ".join(map(str, q["scores"])), len(q["tasks"])), ""]
    kl = data.get("kl") or {}
    if kl.get("panels"):
        lines += _table(["KL panel", "positions", "mean KL", "limit", "result"],
                        [(name, p["positions"], _fmt(p["mean_kl"], 4), kl["limit"], _judged(p["passed"]))
                         for name, p in kl["panels"].items()])
    ps = data.get("prefix_scan") or {}
    if ps.get("hits"):
        lines += _table(["prefix_scan hit", "cold TTFT s", "warm TTFT s", "cached tokens", "logprob drift",
                         "same tokens"],
                        [(h["hit"], _fmt(h["cold_ttft_s"], 3), _fmt(h["warm_ttft_s"], 3), _fmt(h["cached_tokens"]),
                          _fmt(h["drift"], 4), "yes" if h["same_tokens"] else "no") for h in ps["hits"]])
    return lines


def render(data, charts):
    meta = data["meta"]
    lines = ["# Bench report, %s" % meta["started"], "", verdict_words(data), ""]
    lines += ["## What was measured", ""]
    ident = data.get("identity") or {}
    rows = [("server", meta["url"]), ("model", _fmt(ident.get("model", meta.get("model")))),
            ("server version", _fmt(ident.get("server_version"))), ("shape", _fmt(ident.get("shape"))),
            ("release", _fmt(ident.get("release"))), ("config hash", _fmt(ident.get("config_hash"))),
            ("engine config hash", _fmt(ident.get("engine_config_hash"))),
            ("client commit", _fmt(ident.get("client_commit")))]
    for node, info in sorted((ident.get("nodes") or {}).items()):
        rows.append(("node %s" % node, "kernel %s, image %s" % (_fmt(info.get("kernel")), _fmt(info.get("image_id")))))
    lines += _table(["", ""], rows)
    doctor = data.get("doctor") or {}
    method = data.get("method") or {}
    lines += ["Doctor: **%s** - %s." % (doctor.get("status", "-"), doctor.get("why", "-")), "",
              "Method: %s mode, %s samples per point (precision %.0f%%, convergence on %s), idle gate %s, "
              "%s seconds." % (method.get("mode", "quick"), method.get("samples", "-"), 100 * meta["precision"],
                               method.get("converge_on") or "each point's own metric",
                               "on" if meta["idle_gate"] else "OFF", meta["seconds"])]
    for note in method.get("skipped", []):
        lines.append("Not measured: %s." % note)
    lines.append("")
    q = data.get("quality")
    if q:
        lines += ["## Quality gate", "", "%s: %d of %d runs passed%s." % (
            q["task"], sum(r["passed"] for r in q["runs"]), q["required"],
            "" if q["passed"] else " - **failed**, nothing else was measured"), ""]
    lines += gates(data)
    points = data.get("points") or []
    decode = [p for p in points if p["kind"] in ("decode", "portable", "precision")]
    if decode:
        lines += ["## Decode", ""]
        lines += _table(["point", "tok/s (95%)", "decode-window tok/s", "TTFT s", "step ms", "accepted/step",
                         "samples"],
                        [(p["name"], _metric(p, "tps", pct=True), _metric(p, "decode_window_tps"),
                          _metric(p, "ttft_s", 3), _metric(p, "step_ms", 2),
                          _metric(p, "accepted_per_step", 2) if p.get("accepted_per_step") else "not available",
                          len(p["samples"])) for p in decode])
        for p in decode:
            if p.get("json_objects"):
                violation = next((x["json_first_violation"] for x in p["samples"] if x.get("json_first_violation")),
                                 None)
                lines += ["- %s: %.1f completed objects per output, %.0f%% conform to the record schema%s." % (
                    p["name"], p["json_objects"]["mean"], 100 * p["json_schema_valid"]["mean"],
                    "; first violation: %s" % violation if violation else "")]
        warnings = [n for p in decode for n in p.get("notes", [])]
        lines += ["- %s" % n for n in warnings] + ([""] if warnings else [])
    prefill = [p for p in points if p["kind"] == "prefill"]
    if prefill:
        lines += ["## Cold prefill", ""]
        lines += _table(["point", "prompt tokens", "prefill tok/s (95%)", "TTFT s", "samples"],
                        [(p["name"], _metric(p, "prompt_tokens", 0), _metric(p, "prefill_tps", 0, pct=True),
                          _metric(p, "ttft_s", 3), len(p["samples"])) for p in prefill])
    if data.get("sampled"):
        lines += ["## Sampled decode (temperature 1.0)", ""]
        lines += _table(["point", "requests", "tok/s (95%)", "accepted drafts per step"],
                        [(p["name"], p["requests"], _metric(p, "tps", pct=True),
                          _fmt(p["acceptance"].get("accepted_per_step"), 2) if "accepted_per_step" in p["acceptance"]
                          else p["acceptance"]["not_available"]) for p in data["sampled"]])
    if data.get("prefix"):
        pr = data["prefix"]
        lines += ["## Prefix replay", "", "%d tokens: cold %.3f s, warm %s s, %.1fx faster warm; cached tokens %s."
                  % (pr["tokens"], pr["runs"][0]["ttft_s"], " / ".join("%.3f" % r["ttft_s"] for r in pr["runs"][1:]),
                     pr["speedup"], ", ".join(_fmt(r["cached_tokens"]) for r in pr["runs"])), ""]
    if data.get("admission"):
        a = data["admission"]
        lines += ["## Admission", "", "%s: %d contexts of about %d tokens - %s. At once %d "
                  "(engine /metrics %d, streams %s), peak KV use %s%%, "
                  "preemptions %s, %s tok/s per stream." % (
                      "**passed**" if a["passed"] else "**FAILED**", a["contexts"], a["asked_tokens"], a["why"],
                      a.get("at_once", a["peak_running"]), a["peak_running"], _fmt(a.get("peak_streaming")),
                      _fmt(a["peak_kv_pct"]), _fmt(a["preemptions"]),
                      _fmt(a["per_stream_tps"])), ""]
    if (data.get("compliance") or {}).get("not_run"):
        lines += ["## Compliance", "", "Not run: %s." % data["compliance"]["not_run"], ""]
    elif data.get("compliance"):
        c = data["compliance"]
        lines += ["## Compliance (structured output, %d objects per array)" % c["items"], ""]
        lines += _table(["arm", "passed", "first failure"],
                        [(arm, "%d of %d" % (v["passed"], v["total"]),
                          next(("%s: %s" % (r["record"], r["why"]) for r in v["requests"] if not r["passed"]),
                               "-")) for arm, v in c["arms"].items()])
    mem = data.get("memory") or {}
    if mem.get("nodes") or mem.get("not_sampled"):
        lines += ["## Memory", ""]
        if mem.get("not_sampled"):
            lines += ["Not sampled: %s." % mem["not_sampled"], ""]
        else:
            lines += _table(["node", "lowest MemAvailable GiB", "steady guard GiB", "headroom GiB", "readings"],
                            [(n, _fmt(v["min_available_gib"], 2), _fmt(mem["guard_gib"]), _fmt(v["headroom_gib"], 2),
                              v["samples"]) for n, v in sorted(mem["nodes"].items())])
        lines += ["- %s could not be read: %s" % (n, why) for n, why in sorted((mem.get("errors") or {}).items())]
        if mem.get("tripped"):
            lines += ["- **%s**" % mem["tripped"]]
        lines += [""] if mem.get("errors") or mem.get("tripped") else []
    ref = data.get("reference")
    if ref:
        lines += ["## Comparison with %s" % ref["label"], ""]
        notes = ref.get("notes", []) + data.get("comparison_notes", [])
        lines += ["- %s" % n for n in notes] + ([""] if notes else [])
        diffs = data.get("identity_differences") or []
        if diffs:
            lines += _table(["identity", "this run", "reference", "effect"],
                            [(d["field"], d["run"], d["reference"], "not comparable" if d["decides"] else "named")
                             for d in diffs])
        lines += _table(["point", "metric", "now", "reference", "change (95%)", "verdict", "reference from"],
                        [(r["name"], r["metric"], _fmt(r["current"], 2), _fmt(r["reference"], 2),
                          "-" if r["change_pct"] is None else "%+.1f%% %s" % (
                              r["change_pct"], "±%.1f" % r["ci95_pct"] if r["ci95_pct"] is not None
                              else "(no interval)"),
                          r["verdict"] + (": %s" % r["why"] if r.get("why") else ""), r["source"])
                         for r in data.get("comparison") or []])
        info = data.get("reference_info") or []
        if info:
            lines += ["Published figures no suite of this bench measures, shown only (%d): %s." % (len(info), "; ".join(
                "%s %s %s (%s:%d)" % (f.get("what"), f["metric"], f["value"], f["seed"], f["line"]) for f in info)),
                ""]
    if charts:
        lines += ["## Charts", ""] + ["![%s](%s)" % (c.rsplit("/", 1)[-1][:-4], c.rsplit("/", 1)[-1])
                                      for c in charts] + [""]
    return "\n".join(lines).rstrip() + "\n"


