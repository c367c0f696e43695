"""seed 001's ``qeval``: a panel of auto-scored tasks, one at a time at temperature 0, scored on every run, and
compared with a reference's scores task by task.

From the seed (001_9c6b90048b8892ca.txt line 33): "75 auto-scored tasks, c1, temperature 0: 72 / 72 / 72 on
v2.4, the reference 72 / 72 / 72; both miss the same three tasks": three runs, each scored, and the run passes
when it misses no task the reference passes. The 75 tasks are not in the seed, so the panel is a file
(``--qeval-tasks``: a JSON list of tasks in the quality gate's format, ds41f/bench/quality.py); the reference
is an earlier bench.json with a qeval (``--qeval-reference``). Without one the scores are reported, not judged.
"""

from __future__ import annotations

import json
from pathlib import Path

from ds41f.bench import quality

RUNS = 3  # seed 001 line 33: "72 / 72 / 72"


class PanelError(ValueError):
    """A task panel or reference that cannot be used; the message names the file and the fix."""


def load_panel(path):
    try:
        items = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise PanelError("--qeval-tasks %s: cannot read it (%s)" % (path, exc)) from exc
    if not isinstance(items, list) or not items:
        raise PanelError("--qeval-tasks %s: not a JSON list of tasks. Fix: [{\"name\", \"prompt\", \"criterion\"}, "
                         "...] as in ds41f/bench/quality.py" % path)
    tasks = []
    for i, task in enumerate(items):
        if not isinstance(task, dict) or "prompt" not in task or "criterion" not in task:
            raise PanelError("--qeval-tasks %s: task %d has no prompt or criterion" % (path, i + 1))
        tasks.append(dict({"name": "task%d" % (i + 1), "max_tokens": 512, "reasoning": False}, **task))
    names = [t["name"] for t in tasks]
    if len(set(names)) != len(names):
        raise PanelError("--qeval-tasks %s: task names repeat. Fix: give every task its own name" % path)
    return tasks


def reference_passed(path):
    """The tasks an earlier run passed on every one of its runs."""
    try:
        q = json.loads(Path(path).read_text())["qeval"]
        return set(q["passed_every_run"]), q["tasks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PanelError("--qeval-reference %s: no qeval result in it (%s). Fix: a bench.json of a run with "
                         "--suite qeval" % (path, exc)) from exc


def judge(tasks, passed_every_run, reference):
    if reference is None:
        return None, "not judged: no reference (--qeval-reference)", []
    ref_passed, ref_tasks = reference
    if sorted(ref_tasks) != sorted(t["name"] for t in tasks):
        return None, "not judged: the reference scored another panel", []
    lost = sorted(ref_passed - passed_every_run)
    if lost:
        return False, "misses %d task(s) the reference passes: %s" % (len(lost), ", ".join(lost)), lost
    return True, "misses no task the reference passes (%d of %d passed there)" % (len(ref_passed), len(tasks)), []


async def run(bench):
    path = bench.opt("qeval_tasks", None)
    if not path:
        why = "the seed's 75 tasks are not in it. Fix: --qeval-tasks FILE (a JSON list of tasks)"
        bench.log("  qeval not run: %s" % why)
        return {"passed": None, "why": "not run: %s" % why}
    tasks = load_panel(path)
    ref_path = bench.opt("qeval_reference", None)
    reference = reference_passed(ref_path) if ref_path else None
    runs = []
    for r in range(bench.opt("qeval_runs", RUNS)):
        scored = {}
        for task in tasks:  # c1: one request at a time
            body = bench.body([{"role": "user", "content": task["prompt"]}], task["max_tokens"], task["reasoning"],
                              fixed=False)
            result = (await bench.sample([body]))[0]
            ok, why = quality.judge(task, result["text"])
            scored[task["name"]] = {"passed": ok, "why": why, "finish_reason": result["finish_reason"]}
        runs.append(scored)
        bench.log("  qeval run %d: %d / %d" % (r + 1, sum(v["passed"] for v in scored.values()), len(tasks)))
    every = {t["name"] for t in tasks if all(run[t["name"]]["passed"] for run in runs)}
    passed, why, lost = judge(tasks, every, reference)
    bench.log("  qeval: %s" % why)
    return {"tasks": [t["name"] for t in tasks], "scores": [sum(v["passed"] for v in run.values()) for run in runs],
            "runs": runs, "passed_every_run": sorted(every), "reference": ref_path, "lost": lost,
            "passed": passed, "why": why}
