"""`ds41f status`: one line per node (rank, kernel and page size, fabric paths up, engine, guard, free memory)
and the head's API, from playbooks/day2/status.yml's readings; exit 1 when any of them is not as it should be."""

from __future__ import annotations

from ds41f import paths
from ds41f.day2 import common

paths.import_collection()
from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, live_checks  # noqa: E402  (the doctor's)

STALL_FIX = ("a hung collective or kernel; only a stop and start of every rank recovers it: ds41f run serve -e "
             "'{\"serve_replace\": true}' (docker logs on each rank first)")


def gib(value):
    """3.0 -> '3', 2.5 -> '2.5'; what is not a number as it is."""
    try:
        return "%g" % float(value)
    except (TypeError, ValueError):
        return str(value)


def page_size(value):
    try:
        return "%d KiB pages" % (int(value) // 1024)
    except (TypeError, ValueError):
        return "page size unknown"


def paths_up(reading):
    """(up, expected, [why each down path is down]); a path is up when its netdev is up with carrier and every
    ping over it at the fabric MTU was answered."""
    links, pings = reading.get("links") or {}, reading.get("pings") or []
    down = []
    for netdev in reading.get("netdevs") or []:
        link = links.get(netdev) or {}
        lost = [p for p in pings if p.get("netdev") == netdev and not p.get("ok")]
        if not link.get("present"):
            down.append("%s absent" % netdev)
        elif link.get("operstate") != "up" or not link.get("carrier"):
            down.append("%s %s%s" % (netdev, link.get("operstate"), "" if link.get("carrier") else ", no carrier"))
        elif lost:
            down.append("%s no reply from %s" % (netdev, ", ".join(p.get("peer") or p["address"] for p in lost)))
    expected = len(reading.get("netdevs") or [])
    return expected - len(down), expected, down


def engine(reading):
    """(text, problem or None) of the engine container against the rank's launch spec."""
    box = reading.get("container")
    if not box:
        return "engine none", "no engine container. Fix: ds41f run serve"
    text = "engine %s %s" % (box.get("status"), box.get("release") or "(no release label)")
    if not box.get("running"):
        why = "exit %s%s" % (box.get("exit_code"), ", OOM-killed" if box.get("oom_killed") else "")
        return "%s (%s)" % (text, why), "engine %s (%s). Fix: ds41f logs, then ds41f run serve" % (box["status"], why)
    if box.get("spec") != reading.get("spec"):
        return text + " (spec differs)", "engine runs another launch spec than the recipe renders (%s). Fix: " \
            "ds41f render; ds41f run serve -e '{\"serve_replace\": true}'" % reading.get("release")
    return text, None


def guard(reading):
    unit = reading.get("guard") or {}
    state = unit.get("state") or {}
    text = "guard %s" % unit.get("active", "unknown")
    if state.get("phase"):
        text += " %s <%s GiB" % (state["phase"], gib(state.get("threshold_gib")))
    if state.get("tripped"):
        return text + " TRIPPED", "memory guard tripped: %s" % state.get("reason")
    if unit.get("active") != "active":
        return text, "memory guard %s. Fix: ds41f run serve" % unit.get("active", "unknown")
    return text, None


def memory(reading):
    free = (reading.get("memory") or {}).get("available_gib")
    guards = reading.get("guard_gib") or {}
    startup, steady = guards.get("startup"), guards.get("steady")
    text = "free %s GiB (guards %s/%s)" % ("?" if free is None else "%.1f" % free, gib(startup), gib(steady))
    if free is not None and steady is not None and free < float(steady):
        return text, "MemAvailable %.1f GiB is below the steady guard (%s GiB): the guard kills the engine" % (
            free, gib(steady))
    return text, None


def node_line(node, reading):
    """(line, [problems]) of one node."""
    up, expected, down = paths_up(reading)
    fabric = "fabric %d/%d paths up" % (up, expected)
    problems = []
    if down and reading.get("fabric_required", True):
        problems.append("fabric: %s. Fix: ds41f run fabric" % "; ".join(down))
    elif down:
        fabric += " (not required here)"
    parts = ["%-6s rank %s" % (node, reading.get("rank")),
             "%s, %s" % (reading.get("kernel"), page_size(reading.get("page_size"))), fabric]
    for text, problem in (engine(reading), guard(reading), memory(reading)):
        parts.append(text)
        if problem:
            problems.append(problem)
    return "  ".join(parts), problems


def api_line(reading):
    api = reading.get("api") or {}
    progress = api.get("progress") or {}
    if api.get("ready") and progress and not progress.get("ok"):  # answers /v1/models, but no token comes
        return "head API %s answering, engine %s: %s" % (api.get("url"), progress.get("state"), progress.get(
            "seen")), "head engine %s: %s. Fix: %s" % (progress.get("state"), progress.get("seen"), STALL_FIX)
    if api.get("ready"):
        return "head API %s answering: %s%s" % (api.get("url"), ", ".join(api.get("models") or []), (
            " (%s)" % progress["seen"]) if progress else ""), None
    msg = api.get("msg") or "no answer"
    return "head API %s not answering: %s" % (api.get("url"), msg), "head API: %s" % msg


def watchdog(reading):
    """(text or None, problem or None) of the head's serving watchdog state."""
    state = reading.get("watchdog")
    if not state:
        return None, None
    text = "watchdog: breaker %s, %s restart(s)" % (state.get("breaker", "closed"), state.get("restarts", 0))
    if state.get("failed_restarts"):
        text += ", %s could not run" % state["failed_restarts"]
    if live_checks.restart_could_not_run(state):  # not counted: the next stalls try again
        return text, "serving watchdog's restart could not run (not counted as a restart): %s. Fix: %s" % (
            state.get("last_failure"), live_checks.WATCHDOG_ACCESS_FIX)
    if state.get("breaker") == "open":
        return text, "serving watchdog left the group down: %s" % state.get("reason")
    if state.get("last_restart") and state.get("last_restart_ok") is False:
        return text, "serving watchdog's restart failed: %s" % state.get("last_restart_result")
    return text, None


def report(readings, failed=()):
    """(lines, problems) for [(node, reading)] in rank order and [(node, task, message)] of nodes that failed."""
    lines, problems = [], []
    for node, reading in readings:
        line, found = node_line(node, reading)
        lines.append(line)
        problems += ["%s: %s" % (node, p) for p in found]
        if reading.get("head"):
            for line, problem in (api_line(reading), watchdog(reading)):
                lines += [line] if line else []
                problems += [problem] if problem else []
    for node, task, msg in failed:
        row = drift.unreachable_row(node, task, {"msg": msg})  # the doctor's row for it, as data
        first = str(msg).strip().splitlines()[0] if msg else "failed"
        if (row.get("object") or {}).get("kind") == "host key":  # not the pinned key: ssh stopped, nothing ran
            lines.append("%-6s not read: %s: host key %s" % (node, task, row["found"]))
            problems.append("%s: host key: %s. Fix: %s" % (node, row["found"], row["fix"]))
            continue
        lines.append("%-6s not read: %s: %s" % (node, task, first))
        if drift.is_silent(first):  # connected, then nothing: a frozen node, with the doctor's fix
            problems.append("%s: connected, no reply (%s). Fix: %s" % (node, first, drift.SILENT_FIX))
        else:
            problems.append("%s: not read (%s)" % (node, first))
    return lines, problems


def main(inventory, env, limit=None, passthrough=()):
    result = common.run("status", inventory, env, limit=limit, passthrough=passthrough)
    readings = common.by_rank(result.task_results("Status readings"))
    if not readings and result.rc != 0:
        common.report_failures(result, "status")
        return result.rc
    failed = result.failures()
    lines, problems = report(readings, failed)
    print("\n".join(lines))
    for problem in problems:
        print("  - " + problem)
    print("ds41f status: %d node(s), %s in %.0f s; %s" % (
        len(readings) + len(failed), "%d problem(s)" % len(problems) if problems else "all well", result.seconds,
        result.where()))
    return 1 if problems else 0
