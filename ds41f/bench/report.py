"""The bench report (bench.json), the comparison with a reference, and the verdict's exit status."""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path

from ds41f.bench import stats

EXIT_OK, EXIT_REGRESSION, EXIT_STOPPED = 0, 1, 2
LOWER_IS_BETTER = {"step_ms", "ttft_s", "cold_ttft_s", "warm_ttft_s"}
SLOWER, FASTER, LEVEL = "slower than the reference", "faster than the reference", "level with the reference"
NOT_JUDGED = "not judged (one sample: no interval)"


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


def _row(name, metric, cur, ref_mean, change, half, tolerance_pct, source):
    better = -1.0 if metric in LOWER_IS_BETTER else 1.0  # the sign that makes "positive" mean faster
    regressed = stats.regression(better * change, half, tolerance_pct)
    if regressed:
        words = SLOWER
    elif math.isinf(half):
        words = NOT_JUDGED
    elif not math.isinf(half) and better * change - half > 0 and better * change > tolerance_pct:
        words = FASTER
    else:
        words = LEVEL
    return {"name": name, "metric": metric, "current": stats.mean(cur), "reference": ref_mean,
            "change_pct": change, "ci95_pct": None if math.isinf(half) else half, "samples": len(cur),
            "regression": regressed, "verdict": words, "source": source}


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
        change, half, _ = stats.welch(cur, old)
        rows.append(_row(p["name"], metric, cur, stats.mean(old), change, half, tolerance_pct, "reference run"))
    return rows


def compare_published(points, figures, tolerance_pct):
    """Per point and published figure whose pattern names it (and whose metric the point has): the change
    against the figure. Returns (rows, figures no point of this run matched)."""
    rows, unmatched = [], []
    for fig in figures:
        hits = [p for p in points or [] if fig.get("point") and fnmatch.fnmatchcase(p["name"], fig["point"])
                and [s[fig["metric"]] for s in p["samples"] if isinstance(s.get(fig["metric"]), (int, float))]]
        if not hits:
            unmatched.append(fig)
        for p in hits:
            cur = [s[fig["metric"]] for s in p["samples"] if isinstance(s.get(fig["metric"]), (int, float))]
            change, half, _ = stats.welch_published(cur, fig["value"], fig.get("ci95_pct"), fig.get("samples"))
            rows.append(_row(p["name"], fig["metric"], cur, fig["value"], change, half, tolerance_pct,
                             "%s:%d" % (fig["seed"], fig["line"])))
    rows.sort(key=lambda r: (r["name"], r["metric"]))
    return rows, unmatched


def compare_with(points, reference, tolerance_pct):
    """(rows, unmatched published figures) against a reference from reference.load (None: no comparison)."""
    if reference is None:
        return [], []
    if reference["kind"] == "seed":
        return compare_published(points, reference["figures"], tolerance_pct)
    return compare(points, reference["points"], tolerance_pct), []


def verdict(result, comparison):
    """(exit status, reason)."""
    if result.get("stopped"):
        return EXIT_STOPPED, result["stopped"]
    failed = [name for name, check in (("admission", result.get("admission")),) if check and not check["passed"]]
    if failed:
        return EXIT_STOPPED, "the %s check failed" % ", ".join(failed)
    bad = sorted({c["name"] for c in comparison if c["regression"]})
    if bad:
        return EXIT_REGRESSION, "%s beyond the tolerance: %s" % (SLOWER, ", ".join(bad))
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
        lines.append("%-28s %-12s %+8.2f%% %s vs reference: %s" % (
            c["name"], c["metric"], c["change_pct"],
            "+-%.2f" % c["ci95_pct"] if c["ci95_pct"] is not None else "(no interval)", c["verdict"]))
    return lines
