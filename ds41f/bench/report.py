"""The bench report (bench.json), the comparison with a reference, and the verdict's exit status."""

from __future__ import annotations

import fnmatch
import json
import math
import re
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


IDENTITY = ("model", "shape", "release")
DECIDING = ("model", "shape")  # a release differs by design (a new one against the last); it is named, not decisive
NOT_MEASURED, NOT_SERVED, INFO = "not measured", "cannot serve it", "not a bench point"
NOT_SHOWN, NOT_COMPARABLE, NO_REGRESSION = ("not shown level with the reference", "not comparable with the "
                                            "reference", "no regression")
HEADS = (SLOWER, NOT_SHOWN, NOT_COMPARABLE, NO_REGRESSION)  # how a verdict's reason begins


def comparable(current, reference):
    """Differences in how the two were measured (output tokens) that make a comparison doubtful."""
    notes = []
    for key in ("max_tokens", "nodes"):
        a, b = current["meta"].get(key), reference.get("meta", {}).get(key)
        if a is not None and b is not None and a != b:
            notes.append("%s differs: %s now, %s in the reference" % (key, a, b))
    return notes


def _known(value):
    return value is not None and not (isinstance(value, dict) and "unknown" in value)


def identity_differences(identity, reference):
    """The run's model, shape and release against the reference's: one row per field that differs, or that the
    run cannot say while the reference can (a field unknown on both sides is no difference)."""
    rows = []
    for field in IDENTITY:
        now, ref = (identity or {}).get(field), (reference.get("identity") or {}).get(field)
        if not _known(ref) and not _known(now):
            continue
        if now != ref:
            rows.append({"field": field, "run": now if _known(now) else "unknown", "reference":
                         ref if _known(ref) else "unknown", "decides": field in DECIDING})
    return rows


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


def _missing(name, metric, value, source, unmeasured):
    """The row of a reference point this run has no sample of: one it asked for and the server could not serve
    (``unmeasured`` names it and why: it falls short there), or one it did not measure."""
    why = (unmeasured or {}).get(name)
    return {"name": name, "metric": metric, "current": None, "reference": value, "change_pct": None,
            "ci95_pct": None, "samples": 0, "regression": False, "verdict": NOT_SERVED if why else NOT_MEASURED,
            "why": why or "this run has no such point (suite, concurrency or length not asked for, or past the "
                          "shape's sequences)", "source": source}


def _values(point, metric):
    return [s[metric] for s in (point or {}).get("samples") or [] if isinstance(s.get(metric), (int, float))]


def compare(points, reference_points, tolerance_pct, unmeasured=None):
    """Per point and metric of the reference run: the change in percent with Welch's 95% interval, and whether
    it regressed; a reference point this run has no sample of is a row too (not measured, or not served)."""
    mine = {p["name"]: p for p in points or []}
    rows = []
    for r in reference_points or []:
        old = _values(r, r["metric"])
        if not old:
            continue
        cur = _values(mine.get(r["name"]), r["metric"])
        if not cur:
            rows.append(_missing(r["name"], r["metric"], stats.mean(old), "reference run", unmeasured))
            continue
        change, half, _ = stats.welch(cur, old)
        rows.append(_row(r["name"], r["metric"], cur, stats.mean(old), change, half, tolerance_pct, "reference run"))
    return rows


def compare_published(points, figures, tolerance_pct, unmeasured=None):
    """Per published figure: a row per point whose name its pattern matches (and that has its metric), or one
    row saying it was not measured or not served. Returns (rows, the figures that name no bench point)."""
    rows, info = [], []
    for fig in figures:
        if not fig.get("point"):
            info.append(fig)
            continue
        source = "%s:%d" % (fig["seed"], fig["line"])
        hits = [p for p in points or [] if fnmatch.fnmatchcase(p["name"], fig["point"]) and _values(p, fig["metric"])]
        if not hits:
            served = [n for n in unmeasured or {} if fnmatch.fnmatchcase(n, fig["point"])]
            row = _missing(served[0] if served else fig["point"], fig["metric"], fig["value"], source, unmeasured)
            named = [p["name"] for p in points or [] if fnmatch.fnmatchcase(p["name"], fig["point"])]
            if named and not served:
                row["why"] = "%s has no %s (the engine does not report it)" % (", ".join(named), fig["metric"])
            rows.append(row)
        for p in hits:
            cur = _values(p, fig["metric"])
            change, half, _ = stats.welch_published(cur, fig["value"], fig.get("ci95_pct"), fig.get("samples"))
            rows.append(_row(p["name"], fig["metric"], cur, fig["value"], change, half, tolerance_pct, source))
    rows.sort(key=lambda r: (_natural(r["name"]), r["metric"]))
    return rows, info


def compare_with(points, reference, tolerance_pct, unmeasured=None):
    """(rows, published figures that are no bench point) against a reference from reference.load (None: no
    comparison)."""
    if reference is None:
        return [], []
    if reference["kind"] == "seed":
        return compare_published(points, reference["figures"], tolerance_pct, unmeasured)
    return compare(points, reference["points"], tolerance_pct, unmeasured), []


def _natural(name):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]


def _names(rows):
    return ", ".join(sorted({r["name"] for r in rows}, key=_natural))


def _grouped(rows):
    """Names grouped by their reason: "a, b (why); c (other why)"."""
    by = {}
    for r in rows:
        by.setdefault(r["why"], []).append(r)
    return "; ".join("%s (%s)" % (_names(group), why) for why, group in by.items())


def verdict(result, comparison, differences=()):
    """(exit status, reason). Exit 1 unless every reference point was measured and none is slower, and the run
    is the reference's system (model, shape); a release that differs is named whatever the exit."""
    if result.get("stopped"):
        return EXIT_STOPPED, result["stopped"]
    failed = [name for name, check in (("admission", result.get("admission")),) if check and not check["passed"]]
    if failed:
        return EXIT_STOPPED, "the %s check failed" % ", ".join(failed)
    slow = [c for c in comparison if c["regression"]]
    unserved = [c for c in comparison if c["verdict"] == NOT_SERVED]
    missing = [c for c in comparison if c["verdict"] == NOT_MEASURED]
    parts = []
    measured = [c for c in comparison if c["change_pct"] is not None]
    if slow:
        parts.append("%d point(s) significantly slower beyond the tolerance: %s" % (len({c["name"] for c in slow}),
                                                                                     _names(slow)))
    elif measured:
        parts.append("none of the %d measured row(s) is significantly slower (%s)" % (len(measured), ", ".join(
            "%d %s" % (n, w) for w, n in ((w, sum(c["verdict"] == w for c in measured))
                                          for w in (FASTER, LEVEL, NOT_JUDGED)) if n)))
    if unserved:
        parts.append("%d reference point(s) it cannot serve at all: %s" % (len({c["name"] for c in unserved}),
                                                                          _grouped(unserved)))
    if missing:
        parts.append("%d reference point(s) not measured: %s" % (len({c["name"] for c in missing}), _names(missing)))
    if differences:
        parts.append("the run is not the reference's system: %s" % ", ".join(
            "%s %s (reference: %s)" % (d["field"], d["run"], d["reference"]) for d in differences))
    detail = "; ".join(parts)
    if slow or unserved:
        return EXIT_REGRESSION, "%s: %s" % (SLOWER, detail)
    if missing:
        return EXIT_REGRESSION, "%s: %s" % (NOT_SHOWN, detail)
    if any(d["decides"] for d in differences):
        return EXIT_REGRESSION, "%s: %s" % (NOT_COMPARABLE, detail)
    if not comparison:
        return EXIT_OK, "no reference to compare with"
    return EXIT_OK, NO_REGRESSION + ("; %s" % detail if detail else "")


def comparable_points(data):
    """Every measured point of a bench.json a reference figure can name: the sampled points, the sampled-decode
    cases, and one sample each for the prefix replay, the admission check and each node's lowest MemAvailable."""
    points = list(data.get("points") or []) + list(data.get("sampled") or [])
    if (data.get("prefix") or {}).get("runs"):
        pr = data["prefix"]
        warm = [r["ttft_s"] for r in pr["runs"][1:]]
        points.append({"name": "prefix/%d" % pr["asked"], "metric": "cold_ttft_s", "samples": [
            {"cold_ttft_s": pr["runs"][0]["ttft_s"], "warm_ttft_s": sum(warm) / len(warm)}]})
    a = data.get("admission")
    if a and a.get("per_stream_tps") is not None:
        points.append({"name": "admission", "metric": "per_stream_tps", "samples": [
            {k: a[k] for k in ("per_stream_tps", "peak_kv_pct") if a.get(k) is not None}]})
    for node, row in ((data.get("memory") or {}).get("nodes") or {}).items():
        points.append({"name": "memory/%s" % node, "metric": "min_available_gib",
                       "samples": [{"min_available_gib": row["min_available_gib"]}]})
    return points


def reference_points(data):
    """The points of a reference run, one per point and metric it was compared on (prefix: cold and warm)."""
    out = []
    for p in comparable_points(data):
        metrics = sorted({k for s in p["samples"] for k in s if k in ("cold_ttft_s", "warm_ttft_s", "peak_kv_pct")}
                         | {p["metric"]})
        out += [dict(p, metric=m) for m in metrics]
    return out


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
        if c["change_pct"] is None:
            lines.append("%-28s %-12s %s vs reference: %s (%s)" % (c["name"], c["metric"], " " * 9, c["verdict"],
                                                                 c["why"]))
            continue
        lines.append("%-28s %-12s %+8.2f%% %s vs reference: %s" % (
            c["name"], c["metric"], c["change_pct"],
            "+-%.2f" % c["ci95_pct"] if c["ci95_pct"] is not None else "(no interval)", c["verdict"]))
    return lines
