# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's one drift table: rows from task results, severities, and the text, Markdown and JSON forms.

A row is one thing that differs from what the recipe and the site say, on one node:
``{node, stage, setting, expected, found, fix, severity}`` plus optional ``path`` (a fabric path's CIDR,
so the topology picture can colour that cable), ``object``, ``cause`` and ``aspect`` (data the table folds by; code
never reads a row's words). Rows come from three kinds of task result:

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


def report_dir(cwd=None):
    """Where the doctor writes its report: $DS41F_REPORT_DIR, else reports/doctor under the working folder."""
    return os.environ.get(REPORT_DIR_ENV) or os.path.join(cwd or os.getcwd(), "reports", "doctor")


def _text(value):
    if value is None:
        return "(absent)"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _located(thing, node):
    """An object (``converge.obj``) with its node filled in: the row's node unless the object names its own."""
    if not isinstance(thing, dict) or not thing.get("kind"):
        return None
    return {"node": str(thing.get("node") or node), "kind": str(thing["kind"]), "name": str(thing.get("name", ""))}


def row(node, stage, setting, expected, found, fix, severity="error", path=None, about=None, cause=None,
        echo_of=None, aspect=None):
    """One row. ``about``: the object it is about; ``cause``: for a consequence, the object whose row explains
    it. Both are ``{kind, name[, node]}`` data, completed with the row's node. ``echo_of``: for a verdict that
    restates other checks (``echo`` makes one), which rows those are, as data. ``aspect``: the part of the object
    that differs (``converge``'s docstring names those of a fabric link)."""
    if severity not in SEVERITIES:
        severity = "error"
    out = {"node": node, "stage": stage, "setting": _text(setting), "expected": _text(expected),
           "found": _text(found), "fix": _text(fix), "severity": severity}
    if path:
        out["path"] = path
    for key, value in (("object", _located(about, node)), ("cause", _located(cause, node))):
        if value:
            out[key] = value
    if echo_of:
        out["echo_of"] = dict(echo_of)
    if aspect:
        out["aspect"] = str(aspect)
    return out


def echo(stage=None, node=None, on_a_node=False, path=False):
    """The ``echo_of`` of a verdict that restates other checks' rows: those of ``stage``, on ``node``, on any one
    node (``on_a_node``: not a cross-node row), about a fabric path (``path``)."""
    return {k: v for k, v in (("stage", stage), ("node", node), ("on_a_node", on_a_node), ("path", path)) if v}


def key(thing):
    """An object as a hashable key: (node, kind, name)."""
    return (thing["node"], thing["kind"], thing["name"])


def _first_line(text, limit=160):
    text = (text or "").strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _thing(result, task_name):
    """What a changed task without a drift list would change: its file, unit or item, else the task."""
    diff = result.get("diff")
    diff = diff[0] if isinstance(diff, list) and diff else diff
    for value in (result.get("dest"), result.get("path"), (diff or {}).get("after_header") if isinstance(
            diff, dict) else None, result.get("name")):
        if isinstance(value, str) and value:
            return "%s (%s)" % (value, task_name)
    return task_name


def rows_from_result(node, stage, task_name, result, stage_cmd=None):
    """The rows one task result contributes (an empty list when it found nothing).

    A failed task contributes the causes it names (``drift``, ``findings``, ``mismatches``); only a failure
    that names none becomes one row of its own, with the message as what was found."""
    if result.get("skipped"):
        return []
    if "results" in result and isinstance(result["results"], list):  # a loop or node_steps: each item is a result
        out = []
        for item in result["results"]:
            if isinstance(item, dict):
                out.extend(rows_from_result(node, stage, item.get("step") or task_name, item, stage_cmd))
        return out
    fix_stage = "ds41f run %s" % (stage_cmd or stage)
    out = []
    for entry in result.get("findings") or []:
        out.append(row(entry.get("node", node), entry.get("stage", stage), entry.get("setting"),
                       entry.get("expected"), entry.get("found"), entry.get("fix"),
                       entry.get("severity", "error"), entry.get("path"), entry.get("object"), entry.get("cause"),
                       entry.get("echo_of"), entry.get("aspect")))
    drift = result.get("drift") or []
    for entry in drift:  # what a module found different (and, outside check mode, changed)
        out.append(row(entry.get("node", node), entry.get("stage", stage), entry.get("setting"), entry.get("expected"),
                       entry.get("found"), entry.get("fix") or fix_stage, entry.get("severity", "error"),
                       entry.get("path"), entry.get("object"), entry.get("cause"), entry.get("echo_of"),
                       entry.get("aspect")))
        if entry.get("action"):  # what the fix's run would do there: the report keeps it beside the fix
            out[-1]["action"] = _text(entry["action"])
    if result.get("changed") and not drift:
        out.append(row(node, stage, _thing(result, task_name), "as the %s stage sets it" % stage,
                       "would change (see --diff)", fix_stage))
    for mismatch in result.get("mismatches") or []:  # dgxspark.ds41f.alignment: cross-node differences
        out.append(row("all", stage, mismatch.get("setting"), ACROSS_NODES, mismatch.get("found"),
                       mismatch.get("fix"), echo_of=spread_echo(stage)))
    if result.get("failed") and not out:
        out.append(row(node, stage, "%s (a check that named no cause)" % task_name, "no error",
                       _first_line(result.get("msg")) or "failed",
                       "ds41f doctor -v --limit %s shows the whole message; fix what it names" % node))
    return out


def not_checked(node, task_name, result, skipped=False):
    """Checks a task result says it did not make, each ``{node, check, reason}``; the modules say so in one of
    a few ways: ``skipped_checks`` entries, a ``skipped_reason``, ``skipped`` strings ("<check> skipped:
    <reason>"), rows of status ``skipped``, or the module itself skipping (``skipped`` with a ``msg``, not a
    false ``when``)."""
    if "results" in result and isinstance(result["results"], list):
        out = []
        for item in result["results"]:
            if isinstance(item, dict):
                out.extend(not_checked(node, item.get("step") or task_name, item, item.get("skipped") is True))
        return out
    out = []
    for item in result.get("skipped_checks") or []:
        out.append({"node": item.get("node", node), "check": item.get("check") or task_name,
                    "reason": item.get("reason") or "not given"})
    if isinstance(result.get("skipped_reason"), str) and result["skipped_reason"]:
        out.append({"node": node, "check": task_name, "reason": result["skipped_reason"]})
    if isinstance(result.get("skipped"), list):
        for text in result["skipped"]:
            check, sep, reason = str(text).partition(" skipped: ")
            out.append({"node": node, "check": check if sep else task_name, "reason": reason if sep else text})
    elif (skipped or result.get("skipped") is True) and "false_condition" not in result and result.get("msg") \
            and not result.get("skipped_checks"):
        out.append({"node": node, "check": task_name, "reason": _first_line(result["msg"])})
    for r in result.get("rows") or []:
        if isinstance(r, dict) and r.get("status") == "skipped":
            out.append({"node": r.get("node") or node, "check": " ".join(
                str(r[k]) for k in ("netdev", "check") if r.get(k)) or task_name,
                "reason": r.get("message") or r.get("reason") or "not given"})
    return out


def cause_summary(r):
    """A row in a few words, as the reason a later check could not run."""
    return "%s %s is %s (expected %s)" % (r["node"], r["setting"], _first_line(r["found"], 80),
                                          _first_line(r["expected"], 60))


# What ssh says when the node took the connection (its kernel answers TCP) but nothing on it replies: the banner
# never came (ConnectTimeout), the keepalives went unanswered, or the multiplexed session was cut by either.
_SILENT = ("banner exchange", "not responding", "shared connection", "broken pipe", "mux_client", "timed out",
           "timeout")
SILENT_FIX = ("open the node's console or BMC; if it does not answer there either, power-cycle it (BMC), then "
              "ds41f doctor. A frozen Spark is most often unified memory run out: read its journal of the "
              "last boot (journalctl -b -1) once it is back")


def keepalive_budget(ssh_args, connect_timeout=None):
    """Seconds of silence after which ssh gives a node up: ServerAliveInterval x ServerAliveCountMax of
    ``ssh_args`` (ansible.cfg, the one source), else the connection timeout; None when neither is set."""
    words = str(ssh_args or "").replace("=", " ").split()
    opts = {}
    for i, word in enumerate(words[:-1]):
        if word.lower() in ("serveraliveinterval", "serveralivecountmax"):
            opts[word.lower()] = words[i + 1]
    try:
        return int(opts["serveraliveinterval"]) * int(opts.get("serveralivecountmax", 3))
    except (KeyError, ValueError):
        return int(connect_timeout) if connect_timeout else None


def is_silent(msg):
    """Whether an unreachable node's message says it connected but did not reply (rather than refused or absent)."""
    text = str(msg or "").lower()
    return any(word in text for word in _SILENT) and "refused" not in text and "no route" not in text


def node_object(node):
    """The object of a node's connection row: a consequence whose cause lies on that node (its lldpd, its end of a
    path) folds into this one row, so a frozen node is one row, not one more per neighbour."""
    return {"kind": "node", "name": node}


def silent_row(node, task_name, seconds, seen):
    """A node that connected but no longer answers (a frozen node: its kernel takes connections, its processes do not
    answer): one row, whatever stage met it."""
    found = "connected, no reply in %s s" % (seconds if seconds else "the budget of")
    return row(node, "connection", "the node answers (%s)" % task_name, "a reply within %s s" % (seconds or "?"),
               "%s (%s)" % (found, _first_line(seen, 120)) if seen else found, SILENT_FIX, about=node_object(node))


def unreachable_row(node, task_name, result, budget_s=None):
    """The row of a node a task could not reach: frozen, a host key that is not the pinned one (ssh's strict check
    against the site's known_hosts, whose path its message names), or not reachable at all."""
    text = str(result.get("msg") or "")
    msg = _first_line(text) or "unreachable"
    if "host key verification failed" in text.lower():
        site = "-i %s" % os.path.dirname(text.split("Add correct host key in ", 1)[1].split()[0]) \
            if "Add correct host key in " in text else "-i <site folder> (--lab <name> for a lab)"
        if "IDENTIFICATION HAS CHANGED" in text:
            return row(node, "connection", "%s host key (%s)" % (node, task_name), "the key pinned in its site's "
                       "known_hosts", "another key (ssh: REMOTE HOST IDENTIFICATION HAS CHANGED); nothing was run "
                       "on it", "do not trust it until you know why: compare the fingerprint `ds41f hostkeys %s "
                       "--check` prints with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on %s's console; if "
                       "they match (reinstalled, new keys), accept it: ds41f hostkeys %s --accept %s" % (
                           site, node, site, node), about={"kind": "host key", "name": node})
        seen = next((line for line in text.splitlines() if "host key is known" in line), msg)
        return row(node, "connection", "%s host key (%s)" % (node, task_name), "a key pinned in its site's "
                   "known_hosts", "none pinned (ssh: %s)" % _first_line(seen.split("via ssh: ", 1)[-1], 140),
                   "record it at first contact: ds41f hostkeys %s, comparing the fingerprints it prints with each "
                   "node's console" % site, about={"kind": "host key", "name": node})
    if is_silent(msg):
        return silent_row(node, task_name, budget_s, msg)
    return row(node, "connection", "reach the node (%s)" % task_name, "reachable over SSH", msg,
               "check the node is powered, on the management network, and accepts the controller's SSH key",
               about=node_object(node))


def timed_out_row(node, task_name, result):
    """A task that ran past its time limit on a node (ansible's ``timedout``): the node is silent."""
    period = (result.get("timedout") or {}).get("period")
    return silent_row(node, task_name, period, "task time limit of %s s" % period)


# A fabric path's causes, strongest first: the ``aspect`` (converge's docstring) of a row about a CX7 link. A missing
# link or a dead carrier explains everything else on the path (the far end's carrier and address, which networkd drops
# with the carrier, and the pings); an MTU or an address on one end is a cause of its own; the link's other aspects
# and the pings (``reachability``) are echoes.
_CAUSES = ("link", "carrier", "mtu", "address")
_DOWN = ("link", "carrier")
LINK = "link"
REACHABILITY = "reachability"


def _end(r):
    """(node, netdev) of a row about a CX7 link (its object, kind ``link``), else None."""
    thing = r.get("object")
    if not thing or thing.get("kind") != LINK:
        return None
    return (thing.get("node") or r["node"], thing["name"])


def _cause(r):
    """The path cause a row names, as data: the aspect of a row about a link, when it is one of ``_CAUSES``."""
    return r.get("aspect") if _end(r) and r.get("aspect") in _CAUSES else None


def _stray(r):
    """A row about another object than a link (a stray route, address or neighbour entry on the path): kept beside
    the path's causes."""
    return bool(r.get("object")) and not _end(r)


def attach_paths(rows, ends):
    """Give each row about a fabric link the CIDR of its path where its producer did not. ``ends``: {(node, netdev):
    cidr}. A row about another object gives its path itself (a route over a CX7 netdev may concern no path, or
    another one)."""
    for r in rows:
        if not r.get("path") and _end(r) in ends:
            r["path"] = ends[_end(r)]
    return rows


def _fold_down(members, ends):
    """A path that is down: one row naming both ends (``ends`` as data too: the objects of the path's links), what
    each end shows, and one fix."""
    down = sorted((r for r in members if _cause(r) in _DOWN), key=lambda r: _CAUSES.index(_cause(r)))
    first = dict(down[0])
    cidr = first["path"]
    path_ends = sorted(k for k, v in ends.items() if v == cidr) or [_end(first)]
    seen = {}  # (node, netdev) -> {aspect: what the first row of it found}
    for r in members:
        if _cause(r):
            seen.setdefault(_end(r), {}).setdefault(_cause(r), _first_line(r["found"], 60))
    states = []
    for end in path_ends:
        found = seen.get(end)
        states.append("%s %s: %s" % (end[0], end[1], "; ".join(
            "%s %s" % (aspect, found[aspect]) for aspect in _CAUSES if aspect in found) if found else "up"))
    named = " - ".join("%s %s" % end for end in path_ends)
    first["setting"] = "%s %s (cable %s)" % (_end(first)[1], _cause(first), named)
    first["found"] = "; ".join(states)
    if len(path_ends) == 2 and all("link" in seen.get(e, {}) for e in path_ends):
        first["fix"] = ("both ends are gone: re-plug the cable %s (in the lab, `ds41f lab up` re-wires it), then "
                        "ds41f run fabric" % named)
    first["down"] = True
    first["ends"] = [{"node": node, "kind": LINK, "name": netdev} for node, netdev in path_ends]
    return first


def _consolidate_paths(rows, ends):
    """One cause per fabric path, by the rows' data: a wrong MTU, a missing link or address on one end is the row;
    the failed pings and the link's other findings it causes, from either end, are its echoes and are left out. A
    path that is down (a missing link, no carrier) is one row naming both ends. A row about another object that names
    its path (a stray route or neighbour entry that takes the path's addresses) is a cause of that path, kept beside
    the others. A path with no cause keeps its findings about a link, or else one of its failed pings."""
    groups = {}
    for r in rows:
        if r.get("path"):
            groups.setdefault(r["path"], []).append(r)
    keep, replaced = set(), {}
    for members in groups.values():
        strays = [r for r in members if _stray(r)]
        keep.update(id(r) for r in strays)
        if any(_cause(r) in _DOWN for r in members):
            anchor = next(r for r in members if not _stray(r))
            replaced[id(anchor)] = _fold_down(members, ends)
            keep.add(id(anchor))
            continue
        causes = [r for r in members if _cause(r)] or [r for r in members if _end(r)] or strays
        keep.update(id(r) for r in (causes or members[:1]))
    return [replaced.get(id(r), r) for r in rows if not r.get("path") or id(r) in keep]


def _same(r):
    """What makes two rows one finding: a row about a part of an object (``aspect``) is that part of that object,
    whichever check saw it; any other is its node, setting and what was found."""
    if r.get("object") and r.get("aspect"):
        return key(r["object"]) + (r["aspect"],)
    return (r["node"], r["setting"], r["found"])


# The stages that put one artefact on every node (the image, the checkpoint): where one of them names a node whose
# copy is wrong, the cross-node row "the same on every node" of that stage is its echo, not a second cause.
_ONE_COPY_STAGES = ("image", "model")
ACROSS_NODES = "the same on every node"


def spread_echo(stage):
    """The ``echo_of`` of a cross-node difference of ``stage``: where the stage puts one copy on every node, the
    rows naming a node whose copy is wrong explain it; for any other stage it is a cause of its own (None)."""
    return echo(stage=stage, on_a_node=True) if stage in _ONE_COPY_STAGES else None


def _restates(selector, r):
    """Whether row ``r`` is one of those an echo's ``selector`` (its ``echo_of``) restates."""
    return (not r.get("echo_of")
            and all(r.get(k) == selector[k] for k in ("stage", "node") if k in selector)
            and (not selector.get("on_a_node") or r["node"] != "all")
            and (not selector.get("path") or bool(r.get("path"))))


def _drop_echoes(rows):
    """A verdict that restates other checks (its ``echo_of``, data its producer set: the serve preflight's fabric
    and checkpoint verdicts, a cross-node image or checkpoint difference) folds into the rows it restates when one
    is in the table; alone it stays, the only evidence of its cause. Two echoes of one stage and node with the same
    ``echo_of`` are one finding seen twice (the live check and the serve preflight both compare the image IDs):
    the first stays."""
    out, seen = [], set()
    for r in rows:
        selector = r.get("echo_of")
        if selector:
            if any(_restates(selector, other) for other in rows):
                continue
            ident = (r["stage"], r["node"], json.dumps(selector, sort_keys=True))
            if ident in seen:
                continue
            seen.add(ident)
        out.append(r)
    return out


def _drop_caused(rows):
    """A consequence whose cause has a row of its own is that row's echo: folded by object, never by words. So is a
    consequence whose cause lies on a node whose row is the node as a whole (``node_object``: it did not answer, so
    none of its objects could be read). A consequence whose cause has no row stays (it is then the only sign of that
    cause)."""
    named = {key(r["object"]) for r in rows if r.get("object")}
    silent = {r["object"]["node"] for r in rows if r.get("object") and r["object"]["kind"] == "node"}
    return [r for r in rows if not (r.get("cause") and r["cause"] != r.get("object")
                                    and (key(r["cause"]) in named or r["cause"]["node"] in silent))]


def dedupe(rows, ends=None):
    """The table's rows: one per finding, errors first, then by node.

    A finding reported twice (the same part of one object, ``aspect``, by a stage in check mode and by a live
    check, or the same setting and finding by two stages that both keep the object, as /etc/ds41f) is one row: the
    first that says what its fix's run would do (``action``), else the first; a fabric path's echoes (the serve
    preflight's fabric verdict among them) fold into its cause (``ends`` as in ``attach_paths``), an image or
    checkpoint that differs across nodes folds into the rows naming the nodes whose copy is wrong, a row whose
    ``cause`` object has a row of its own, or lies on a node that did not answer, folds into that row, the serve
    preflight's view of a node's checkpoint folds into the model stage's rows on that node, and a row whose found is
    its expected (a record that would only be rewritten) is no drift at all."""
    ends = ends or {}
    rows = _drop_caused([r for r in rows if r["expected"] != r["found"]])
    # after attach_paths: an echo of the fabric's paths looks for rows that carry their path
    rows = _consolidate_paths(_drop_echoes(attach_paths([dict(r) for r in rows], ends)), ends)
    seen, out = {}, []
    for r in rows:
        same = _same(r)
        if same not in seen:
            seen[same] = len(out)
            out.append(r)
        elif r.get("action") and not out[seen[same]].get("action"):
            out[seen[same]] = r  # the row of the stage that mends it (what its run would do) over a check's view
    return sorted(out, key=lambda r: (SEVERITIES.index(r["severity"]), r["node"], r["stage"], r["setting"]))


def counts(rows):
    return {sev: sum(1 for r in rows if r["severity"] == sev) for sev in SEVERITIES}


def node_status(rows, nodes, checked=None):
    """{node: ok|warn|drift|unchecked} for the picture; a row on 'all' marks every node. A node no check read
    (``checked``: the nodes the live checks read; None: every node) is unchecked unless a row names it."""
    status = {n: "ok" if checked is None or n in checked else "unchecked" for n in nodes}
    for r in rows:
        targets = nodes if r["node"] == "all" else [r["node"]]
        for n in targets:
            if n not in status:
                continue
            if r["severity"] == "error":
                status[n] = "drift"
            elif status[n] in ("ok", "unchecked"):
                status[n] = "warn"
    return status


def path_status(rows, checked=None):
    """{cidr: ok|down|drift} for fabric paths: those a row names, and ``checked`` ones (ok unless a row names
    them). A path in neither is left out: the picture draws it unchecked."""
    out = {cidr: "ok" for cidr in checked or ()}
    for r in rows:
        if r.get("path"):
            down = r.get("down") or r.get("aspect") == REACHABILITY or _cause(r) in _DOWN
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


def not_checked_list(items):
    """Every check not made, once per node, check and reason, sorted: doctor.json's ``not_checked``."""
    seen = {(i["node"], i["check"], i["reason"]) for i in items}
    return [{"node": n, "check": c, "reason": r} for n, c, r in sorted(seen)]


def not_checked_lines(items):
    """One line per check and reason, naming the nodes: what the terminal shows under the table."""
    groups = {}
    for item in not_checked_list(items):
        groups.setdefault((item["check"], item["reason"]), []).append(item["node"])
    return ["not checked: %s on %s: %s" % (check, ", ".join(nodes), reason)
            for (check, reason), nodes in sorted(groups.items())]


def markdown(rows, title="ds41f doctor", not_checked=()):
    n = counts(rows)
    out = ["# %s" % title, "", "%d error(s), %d warning(s)." % (n["error"], n["warn"]), ""]
    if rows:
        out.append("| severity | " + " | ".join(COLUMNS) + " |")
        out.append("|" + " --- |" * (len(COLUMNS) + 1))
        for r in rows:
            out.append("| %s | %s |" % (r["severity"], " | ".join(_md(r[c]) for c in COLUMNS)))
    else:
        out.append("No drift: every node matches the recipe and the site.")
    if not_checked:
        out += ["", "## Not checked", "", "Never counted as passing.", "", "| node | check | reason |",
                "| --- | --- | --- |"]
        out += ["| %s | %s | %s |" % (_md(i["node"]), _md(i["check"]), _md(i["reason"])) for i in not_checked]
    return "\n".join(out) + "\n"


def report(rows, extra=None):
    data = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "counts": counts(rows),
            "rows": rows}
    data.update(extra or {})
    return data
