"""Pass or fail: the measurements of one qualification against its device kind's thresholds.

Every check is a dict {name, value, limit, op, ok, note}: ``ok`` is True or False when the check is gated
and None when its threshold is null (measured and reported only). A measurement that is missing fails its
gated check: a node is never qualified on a number nobody measured.
"""

from __future__ import annotations

import math

from ds41f_kernels import catalog

SCHEMA = "ds41f-qualify/1"


def _check(name, value, limit, op, note=None):
    if limit is None:
        return {"name": name, "value": value, "limit": None, "op": op, "ok": None,
                "note": note or "measured, not gated (null threshold)"}
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {"name": name, "value": value, "limit": limit, "op": op, "ok": False,
                "note": note or "not measured"}
    ok = value >= limit if op == ">=" else value <= limit
    return {"name": name, "value": value, "limit": limit, "op": op, "ok": ok, "note": note}


def _get(doc, *path):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def checks(doc, entry):
    """The checks of a measurement document ``doc`` against a device kind's ``entry`` of thresholds.yml."""
    limits = entry["thresholds"]
    out = [
        _check("copy_vs_torch", _get(doc, "bandwidth", "copy", "vs_torch"), limits["copy_vs_torch_min"], ">="),
        _check("triad_vs_torch_copy", _get(doc, "bandwidth", "triad", "vs_torch_copy"),
               limits["triad_vs_torch_min"], ">="),
        _check("copy_of_peak", _get(doc, "bandwidth", "copy", "of_peak"), limits["copy_of_peak_min"], ">="),
    ]
    # A copy is exact by definition; the triad may differ from torch's by a fused multiply-add's rounding.
    out.append(_check("copy_rel_error", _get(doc, "bandwidth", "copy", "rel_error"), 0.0, "<="))
    out.append(_check("triad_rel_error", _get(doc, "bandwidth", "triad", "rel_error"),
                      limits["triad_rel_error_max"], "<="))
    for fmt in entry["gemm_formats"]:
        name = catalog.GEMM_NAMES[fmt]
        out.append(_check("%s_vs_torch" % name, _get(doc, "gemm", name, "vs_torch"),
                          limits["%s_vs_torch_min" % name], ">="))
        out.append(_check("%s_rel_error" % name, _get(doc, "gemm", name, "rel_error"),
                          limits["%s_rel_error_max" % name], "<="))
    out.append(_check("gemm_bf16_decode_rel_error", _get(doc, "gemm", "gemm_bf16_decode", "rel_error"),
                      limits["gemm_bf16_rel_error_max"], "<="))
    out.append(census_check(doc.get("census"), limits["census_repeats"]))
    return out


def census_check(census, required):
    """Identical bits in every repeat, alone and co-resident, over at least ``required`` repeats."""
    if not census:
        return _check("census", None, 0, "<=")
    mismatches = census_mismatches(census)
    if census.get("repeats", 0) < required:
        return {"name": "census", "value": mismatches, "limit": 0, "op": "<=", "ok": False,
                "note": "ran %d repeats; this device kind requires %d" % (census.get("repeats", 0), required)}
    return _check("census", mismatches, 0, "<=", mismatch_note(census) if mismatches else None)


def census_mismatches(census):
    return sum(sum(census.get(phase, {}).values()) for phase in ("alone", "co_resident"))


def mismatch_note(census):
    bad = ["%s %s: %d of %d" % (kernel, phase.replace("_", "-"), count, census["repeats"])
           for phase in ("alone", "co_resident") for kernel, count in sorted(census.get(phase, {}).items())
           if count]
    return "repeats that gave different bits: " + "; ".join(bad)


def finish(doc, entry):
    """Add the checks and the overall status to a measurement document; returns it."""
    doc["checks"] = checks(doc, entry)
    doc["census_mismatches"] = census_mismatches(doc.get("census") or {})
    doc["status"] = "passed" if all(c["ok"] is not False for c in doc["checks"]) else "failed"
    return doc


def summary(doc):
    """A short human-readable report of a finished document."""
    lines = ["qualification %s: %s (%s)" % (doc.get("status"), _get(doc, "device", "name") or "no device",
                                             _get(doc, "device", "kind") or "-")]
    if doc.get("reason"):
        lines.append("  " + doc["reason"])
    census = doc.get("census")
    if census:
        share = census.get("co_resident_share", {}).values()
        lines.append("  census: %d repeats of %d kernels, alone and beside a copy on another stream"
                     " (side by side %.0f-%.0f%% of the kernel's time)"
                     % (census["repeats"], len(census["alone"]), 100 * min(share, default=0),
                        100 * max(share, default=0)))
    for check in doc.get("checks", []):
        mark = {True: "ok  ", False: "FAIL", None: "info"}[check["ok"]]
        value = check["value"]
        shown = "%.4g" % value if isinstance(value, float) else str(value)
        limit = "" if check["limit"] is None else " (%s %s)" % (check["op"], check["limit"])
        note = " - " + check["note"] if check.get("note") and check["ok"] is not True else ""
        lines.append("  %s %-28s %s%s%s" % (mark, check["name"], shown, limit, note))
    return "\n".join(lines)
