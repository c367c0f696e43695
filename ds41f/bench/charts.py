"""Charts of a bench report (PNG): decode throughput and first-token time by concurrency, prefill by length,
the change against the reference with its Welch interval, and each node's MemAvailable during the run."""

from __future__ import annotations

import os


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _mean_ci(point, metric):
    m = point.get(metric) or {}
    return m.get("mean", 0.0), m.get("ci95") or 0.0


def draw(report, directory):
    """Write the charts the report has data for; return their paths."""
    plt = _plt()
    written = []
    decode = [p for p in report.get("points", []) if p["kind"] == "decode" and p["samples"]]
    if decode:
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
        series = {}
        for p in decode:
            key = "%s, reasoning %s" % (p["params"]["prompt"], "on" if p["params"]["reasoning"] else "off")
            series.setdefault(key, []).append(p)
        for key, pts in sorted(series.items()):
            pts.sort(key=lambda p: p["params"]["concurrency"])
            xs = [p["params"]["concurrency"] for p in pts]
            for ax, metric in zip(axes, ("tps", "decode_window_tps", "ttft_s"), strict=True):
                ys, es = zip(*(_mean_ci(p, metric) for p in pts), strict=True)
                ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=key)
        ticks = sorted({p["params"]["concurrency"] for p in decode})
        for ax, title in zip(axes, ("output tok/s", "decode-window tok/s", "time to first token (s)"), strict=True):
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [str(t) for t in ticks])
            ax.set_xlabel("concurrent streams")
            ax.set_title(title)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle("decode, %d output tokens (mean and 95%% interval)" % report["meta"]["max_tokens"])
        written.append(_save(fig, plt, directory, "decode.png"))
    prefill = sorted((p for p in report.get("points", []) if p["kind"] == "prefill" and p["samples"]),
                     key=lambda p: p["params"]["tokens"])
    if prefill:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        xs = [p["prompt_tokens"]["mean"] for p in prefill]
        ys, es = zip(*(_mean_ci(p, "prefill_tps") for p in prefill), strict=True)
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3)
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, ["%d" % x for x in xs])
        ax.set_xlabel("prompt tokens (cold, real text)")
        ax.set_ylabel("prefill tok/s")
        ax.grid(alpha=0.3)
        written.append(_save(fig, plt, directory, "prefill.png"))
    comparison = [c for c in report.get("comparison") or [] if c["change_pct"] is not None]  # measured rows
    if comparison:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(comparison) + 1.5))
        names = ["%s %s" % (c["name"], c["metric"]) for c in comparison]
        ax.barh(names, [c["change_pct"] for c in comparison], xerr=[c["ci95_pct"] or 0 for c in comparison],
                color=["#c62828" if c["regression"] else "#2e7d32" for c in comparison], capsize=3)
        ax.axvline(0, color="black", lw=0.8)
        ax.axvline(-report["meta"]["tolerance_pct"], color="#c62828", ls="--", lw=0.8)
        ax.set_xlabel("change against the reference, % (Welch 95% interval)")
        written.append(_save(fig, plt, directory, "comparison.png"))
    memory = (report.get("memory") or {}).get("series") or []
    if memory:
        fig, ax = plt.subplots(figsize=(8, 4))
        for node in sorted({r["node"] for r in memory}):
            rows = [r for r in memory if r["node"] == node]
            ax.plot([r["t"] for r in rows], [r["available_gib"] for r in rows], marker=".", label=node)
        guard = report["memory"]["guard_gib"]
        ax.axhline(guard, color="#c62828", ls="--", lw=0.8, label="steady guard %.1f GiB" % guard)
        ax.set_xlabel("seconds into the run")
        ax.set_ylabel("MemAvailable (GiB)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(_save(fig, plt, directory, "memory.png"))
    return written


def _save(fig, plt, directory, name):
    path = os.path.join(directory, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
