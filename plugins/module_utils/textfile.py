# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Metrics in Prometheus text format for node_exporter's textfile collector (--collector.textfile.directory):
the doctor's last verdict, the serving watchdog's and the memory guards' state, the checkpoint scrub's result. One
file per writer, replaced whole (a scrape never reads half a file). Pure Python; the serving watchdog, the memory
guard and the checkpoint scrub carry a copy of this file beside them (ds41f_textfile.py)."""

from __future__ import annotations

import os

PREFIX = "ds41f_"


def _labels(labels):
    if not labels:
        return ""
    return "{%s}" % ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
                             for k, v in sorted(labels.items()))


def render(metrics):
    """Text of ``[(name, type, help, [(labels, value)])]``; names get the ds41f_ prefix."""
    out = []
    for name, kind, text, samples in metrics:
        full = PREFIX + name
        out.append("# HELP %s %s" % (full, text))
        out.append("# TYPE %s %s" % (full, kind))
        for labels, value in samples:
            out.append("%s%s %s" % (full, _labels(labels), repr(float(value))))
    return "\n".join(out) + "\n"


def write(directory, name, text):
    """Write ``name`` (ending in .prom) in ``directory`` through a temporary file and a rename."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    tmp = "%s.%d.tmp" % (path, os.getpid())  # node_exporter reads *.prom only
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path


def doctor_metrics(counts, nodes, failed, finished):
    """The doctor's verdict: rows by severity, nodes read and not read, when it finished."""
    return [
        ("doctor_rows", "gauge", "Rows of the last doctor's drift table, by severity.",
         [({"severity": sev}, n) for sev, n in sorted(counts.items())]),
        ("doctor_nodes", "gauge", "Nodes of the last doctor run: read, or not read (silent, unreachable).",
         [({"state": "read"}, nodes - failed), ({"state": "not_read"}, failed)]),
        ("doctor_ok", "gauge", "1 when the last doctor found no error.", [({}, 0 if counts.get("error") else 1)]),
        ("doctor_last_run_timestamp_seconds", "gauge", "When the last doctor finished (Unix time).",
         [({}, finished)]),
    ]


def watchdog_metrics(state):
    """The serving watchdog's state file as metrics."""
    verdicts = ("answering", "moving", "stalled", "refused")
    return [
        ("watchdog_breaker_open", "gauge", "1 when the circuit breaker left the group down.",
         [({}, 1 if state.get("breaker") == "open" else 0)]),
        ("watchdog_restarts_total", "counter", "Group restarts by the watchdog.", [({}, state.get("restarts", 0))]),
        ("watchdog_failed_restarts_total", "counter", "Restarts that could not run (a restart command failed).",
         [({}, state.get("failed_restarts", 0))]),
        ("watchdog_last_restart_timestamp_seconds", "gauge", "When the watchdog last restarted the group (0: never).",
         [({}, state.get("last_restart") or 0)]),
        ("watchdog_verdict", "gauge", "The last look's verdict (1 for the one it was).",
         [({"verdict": v}, 1 if state.get("verdict") == v else 0) for v in verdicts]),
        ("watchdog_last_check_timestamp_seconds", "gauge", "When the watchdog last judged the engine.",
         [({}, state.get("checked_at") or 0)]),
    ]


def memguard_metrics(state):
    """The memory guard's state (its phase, threshold, the last and lowest MemAvailable, a trip) as metrics."""
    phase = {"phase": state.get("phase") or "unknown"}
    return [
        ("memguard_tripped", "gauge", "1 when the guard killed the engine (until the next start re-arms it).",
         [(phase, 1 if state.get("tripped") else 0)]),
        ("memguard_threshold_gib", "gauge", "The guard's MemAvailable threshold.",
         [(phase, state.get("threshold_gib") or 0)]),
        ("memguard_mem_available_gib", "gauge", "MemAvailable at the last sample.",
         [(phase, state.get("mem_available_gib") or 0)]),
        ("memguard_lowest_mem_available_gib", "gauge", "The lowest MemAvailable since the guard was armed.",
         [(phase, state.get("lowest_gib") or 0)]),
        ("memguard_last_sample_timestamp_seconds", "gauge", "When the guard last sampled, or tripped (Unix time).",
         [(phase, state.get("time") or 0)]),
    ]


def model_scrub_metrics(state):
    """The checkpoint scrub's last result (plugins/module_utils/scrub.py's state) as metrics."""
    bad = state.get("bad") or []
    return [
        ("model_scrub_last_run_timestamp_seconds", "gauge", "When the last checkpoint scrub ended (Unix time).",
         [({}, state.get("finished") or 0)]),
        ("model_scrub_duration_seconds", "gauge", "How long the last checkpoint scrub ran.",
         [({}, state.get("seconds") or 0)]),
        ("model_scrub_complete", "gauge", "1 when the last scrub judged every file of the checkpoint.",
         [({}, 1 if state.get("complete") else 0)]),
        ("model_scrub_files", "gauge", "Files of the checkpoint's manifest.", [({}, state.get("files") or 0)]),
        ("model_scrub_files_checked", "gauge", "Files the last scrub judged (read in full, or found missing).",
         [({}, state.get("checked") or 0)]),
        ("model_scrub_files_bad", "gauge", "Files the last scrub found bad, by problem (corrupt: sha256 differs).",
         [({"problem": p}, sum(1 for b in bad if b.get("problem") == p))
          for p in ("corrupt", "unreadable", "missing", "size")]),
        ("model_scrub_bytes_read", "gauge", "Bytes the last scrub read and hashed.", [({}, state.get("bytes") or 0)]),
    ]
