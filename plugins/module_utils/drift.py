# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's one drift table: rows from task results, severities, and the text, Markdown and JSON forms.

A row is one thing that differs from what the recipe and the site say, on one node:
``{node, stage, setting, expected, found, fix, severity}`` plus optional ``path`` (a fabric path's CIDR,
so the topology picture can colour that cable). Rows come from three kinds of task result:

- a module's ``drift`` list (``converge.Plan`` in check mode, or a read-only check's failing rows),
  severity ``error`` unless the entry says otherwise;
- a live check of the verify stage: its ``findings`` list, each with its own severity;
- any other task that would change something (``changed`` in check mode), or that failed: one row
  naming the task, so nothing that differs is left out of the table because its module predates ``Plan``.

Pure Python: the callback, the verdict action and the unit tests share it.
"""

from __future__ import annotations

import json
import os
import time

SEVERITIES = ("error", "warn")
COLUMNS = ("node", "stage", "setting", "expected", "found", "fix")
REPORT_DIR_ENV = "DS41F_REPORT_DIR"
ROWS_FILE = "rows.json"


def report_dir(cwd=None):
    """Where the doctor writes its report: $DS41F_REPORT_DIR, else reports/doctor under the working folder."""
    return os.environ.get(REPORT_DIR_ENV) or os.path.join(cwd or os.getcwd(), "reports", "doctor")


def _text(value):
    if value is None:
        return "(absent)"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def row(node, stage, setting, expected, found, fix, severity="error", path=None):
    if severity not in SEVERITIES:
        severity = "error"
    out = {"node": node, "stage": stage, "setting": _text(setting), "expected": _text(expected),
           "found": _text(found), "fix": _text(fix), "severity": severity}
    if path:
        out["path"] = path
    return out


def _first_line(text, limit=160):
    text = (text or "").strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def rows_from_result(node, stage, task_name, result, stage_cmd=None):
    """The rows one task result contributes (an empty list when it found nothing)."""
    if result.get("skipped"):
        return []
    if "results" in result and isinstance(result["results"], list):  # a loop: each item is a result
        out = []
        for item in result["results"]:
            if isinstance(item, dict):
                out.extend(rows_from_result(node, stage, task_name, item, stage_cmd))
        return out
    fix_stage = "ds41f run %s" % (stage_cmd or stage)
    out = []
    for entry in result.get("findings") or []:
        out.append(row(entry.get("node", node), entry.get("stage", stage), entry.get("setting"),
                       entry.get("expected"), entry.get("found"), entry.get("fix"),
                       entry.get("severity", "error"), entry.get("path")))
    drift = result.get("drift") or []
    for entry in drift:  # what a module found different (and, outside check mode, changed)
        out.append(row(node, stage, entry.get("setting"), entry.get("expected"), entry.get("found"),
                       entry.get("fix") or fix_stage, entry.get("severity", "error"), entry.get("path")))
    if result.get("changed") and not drift:
        out.append(row(node, stage, task_name, "as the %s stage sets it" % stage, "would change (see --diff)",
                       fix_stage))
    for mismatch in result.get("mismatches") or []:  # dgxspark.ds41f.alignment: cross-node differences
        out.append(row("all", stage, mismatch.get("setting"), "the same on every node", mismatch.get("found"),
                       mismatch.get("fix")))
    if result.get("failed") and not out:
        out.append(row(node, stage, task_name, "the task succeeds", _first_line(result.get("msg")) or "failed",
                       "read the task's message above, fix the cause, then re-run the doctor"))
    return out


def unreachable_row(node, task_name, result):
    return row(node, "connection", "reach the node (%s)" % task_name, "reachable over SSH",
               _first_line(result.get("msg")) or "unreachable",
               "check the node is powered, on the management network, and accepts the controller's SSH key")


_CAUSES = ("mtu", "link", "carrier", "address")


def _subject(r):
    """A row's setting without a leading node name ('dgx2 enp1s0f1np1 mtu' and 'enp1s0f1np1 mtu' are one)."""
    setting = r["setting"]
    prefix = r["node"] + " "
    return setting[len(prefix):] if setting.startswith(prefix) else setting


def attach_paths(rows, ends):
    """Give each row about a fabric netdev the CIDR of its path. ``ends``: {(node, netdev): cidr}."""
    for r in rows:
        if not r.get("path"):
            for word in _subject(r).split():
                if (r["node"], word) in ends:
                    r["path"] = ends[(r["node"], word)]
                    break
    return rows


def _consolidate_paths(rows):
    """One cause per fabric path: a wrong MTU, a missing link or address on one end is the row; the failed
    pings and link checks it causes, from either end, are its echoes and are left out."""
    groups = {}
    for r in rows:
        if r.get("path"):
            groups.setdefault(r["path"], []).append(r)
    keep = set()
    for members in groups.values():
        causes = [r for r in members if "->" not in r["setting"] and _subject(r).split()[-1] in _CAUSES]
        keep.update(id(r) for r in (causes or members[:1]))
    return [r for r in rows if not r.get("path") or id(r) in keep]


def dedupe(rows, ends=None):
    """The table's rows: one per finding, errors first, then by node.

    A finding reported twice (by a stage in check mode and by a live check, with or without the node name in
    front of the setting) is one row, and a fabric path's echoes fold into its cause (``ends`` as in
    ``attach_paths``)."""
    rows = _consolidate_paths(attach_paths([dict(r) for r in rows], ends or {}))
    seen, out = set(), []
    for r in rows:
        key = (r["node"], r["stage"], _subject(r), r["found"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return sorted(out, key=lambda r: (SEVERITIES.index(r["severity"]), r["node"], r["stage"], r["setting"]))


def counts(rows):
    return {sev: sum(1 for r in rows if r["severity"] == sev) for sev in SEVERITIES}


def node_status(rows, nodes):
    """{node: ok|warn|drift} for the picture; a row on 'all' marks every node."""
    status = {n: "ok" for n in nodes}
    for r in rows:
        targets = nodes if r["node"] == "all" else [r["node"]]
        for n in targets:
            if n not in status:
                continue
            if r["severity"] == "error":
                status[n] = "drift"
            elif status[n] == "ok":
                status[n] = "warn"
    return status


def path_status(rows):
    """{cidr: down|drift} for fabric paths that a row names."""
    out = {}
    for r in rows:
        if r.get("path"):
            down = r["setting"].split()[-1] in ("carrier", "reachability", "link") or "path ->" in r["setting"]
            if down or out.get(r["path"]) != "down":
                out[r["path"]] = "down" if down else "drift"
    return out


# -- renderings ------------------------------------------------------------------------------------


def _clip(text, width):
    return text if len(text) <= width else text[:width - 1] + "~"


def _first_difference(expected, found):
    """For a file's whole text: the first line where expected and found differ, instead of both texts."""
    if "\n" not in expected and "\n" not in found:
        return expected, found
    a, b = expected.splitlines(), found.splitlines()
    for i in range(max(len(a), len(b))):
        left = a[i] if i < len(a) else "(no line %d)" % (i + 1)
        right = b[i] if i < len(b) else "(no line %d)" % (i + 1)
        if left != right:
            return left, right
    return expected, found


def table(rows, width=160):
    """The terminal table; long cells are clipped (the Markdown and JSON reports keep them whole)."""
    if not rows:
        return "No drift: every node matches the recipe and the site."
    head = ("sev",) + COLUMNS
    cells = []
    for r in rows:
        expected, found = _first_difference(r["expected"], r["found"])
        cells.append((r["severity"], r["node"], r["stage"], r["setting"], expected, found, r["fix"]))
    caps = [5, 10, 13, 34, 22, 22, 60]
    budget = max(width - 3 * (len(head) - 1), 60)
    widths = [min(max(len(str(c[i])) for c in cells + [head]), caps[i]) for i in range(len(head))]
    while sum(widths) > budget and max(widths) > 8:
        widths[widths.index(max(widths))] -= 1
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
             "-+-".join("-" * w for w in widths)]
    for c in cells:
        lines.append(" | ".join(_clip(str(v), w).ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
    n = counts(rows)
    lines.append("%d error%s, %d warning%s" % (n["error"], "" if n["error"] == 1 else "s",
                                               n["warn"], "" if n["warn"] == 1 else "s"))
    return "\n".join(lines)


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(rows, title="ds41f doctor"):
    n = counts(rows)
    out = ["# %s" % title, "", "%d error(s), %d warning(s)." % (n["error"], n["warn"]), ""]
    if rows:
        out.append("| severity | " + " | ".join(COLUMNS) + " |")
        out.append("|" + " --- |" * (len(COLUMNS) + 1))
        for r in rows:
            out.append("| %s | %s |" % (r["severity"], " | ".join(_md(r[c]) for c in COLUMNS)))
    else:
        out.append("No drift: every node matches the recipe and the site.")
    return "\n".join(out) + "\n"


def report(rows, extra=None):
    data = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "counts": counts(rows),
            "rows": rows}
    data.update(extra or {})
    return data


def write_rows(directory, rows):
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, ROWS_FILE + ".tmp")
    with open(tmp, "w") as handle:
        json.dump(rows, handle, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(directory, ROWS_FILE))


def read_rows(directory):
    with open(os.path.join(directory, ROWS_FILE)) as handle:
        return json.load(handle)
