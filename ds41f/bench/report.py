"""The bench report (bench.json), the comparison with a reference run, and the verdict's exit status."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ds41f.bench import stats

EXIT_OK, EXIT_REGRESSION, EXIT_STOPPED = 0, 1, 2


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit("ds41f bench: cannot read the reference %s (%s)" % (path, exc)) from exc


def comparable(current, reference):
    """Differences in what was measured (model, server, settings) that make a comparison doubtful."""
    notes = []
    for key in ("model", "max_tokens", "nodes", "shape"):
        a, b = current["meta"].get(key), reference.get("meta", {}).get(key)
        if a is not None and b is not None and a != b:
            notes.append("%s differs: %s now, %s in the reference" % (key, a, b))
    return notes


def compare(points, reference_points, tolerance_pct):
    """Per point present in both runs: change in percent with Welch's 95% interval, and whether it regressed."""
    ref = {p["name"]: p for p in reference_points or []}
    rows = []
    for p in points or []:
        r = ref.get(p["name"])
        if r is None or not p["samples"] or not r.get("samples"):
            continue
        metric = p["metric"]
        cur = [s[metric] for s in p["samples"]]
        old = [s[metric] for s in r["samples"]]
        change, half, dof = stats.welch(cur, old)
        rows.append({"name": p["name"], "metric": metric, "current": stats.mean(cur), "reference": stats.mean(old),
                     "change_pct": change, "ci95_pct": None if math.isinf(half) else half,
                     "regression": stats.regression(change, half, tolerance_pct)})
    return rows


def verdict(result, comparison):
    """(exit status, reason)."""
    if result.get("stopped"):
        return EXIT_STOPPED, result["stopped"]
    bad = [c["name"] for c in comparison if c["regression"]]
    if bad:
        return EXIT_REGRESSION, "slower than the reference beyond the tolerance: %s" % ", ".join(bad)
    return EXIT_OK, "no regression" if comparison else "no reference to compare with"


def summary_lines(report):
    lines = []
    for p in report.get("points", []):
        m = p.get(p["metric"]) or {}
        ttft = p.get("ttft_s") or {}
        lines.append("%-28s %10.1f %s (+-%s)  ttft %.3f s" % (
            p["name"], m.get("mean", 0), p["metric"],
            "%.1f%%" % (100 * m["ci95"] / m["mean"]) if m.get("ci95") is not None and m.get("mean") else "n/a",
            ttft.get("mean", 0)))
    for c in report.get("comparison", []):
        lines.append("%-28s %+7.2f%% %s vs reference%s" % (
            c["name"], c["change_pct"], "+-%.2f" % c["ci95_pct"] if c["ci95_pct"] is not None else "(no interval)",
            "  REGRESSION" if c["regression"] else ""))
    return lines
