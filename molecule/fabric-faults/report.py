"""Summarise an ansible-playbook run printed by the ansible.posix.json callback (stdin) as compact JSON.

changed: [{task, host, drift}], failed: [{task, host, msg}], rows: the fabric check rows of every host (its
last check of the run), messages: the msg lines of debug tasks, stats: per host. A node_steps task counts as
its steps, each named as the task it stands for ("<role> : <step>"); a step's change or failure counts when its
task's does (a run's audit reads in check mode and reports neither).
"""

import json
import sys


def results(name, result):
    """(task name, result) of a task, or of each step of a node_steps task."""
    steps = result.get("results")
    if isinstance(steps, list) and steps and all(isinstance(s, dict) and "step" in s for s in steps):
        role = name.rsplit(" : ", 1)[0] + " : " if " : " in name else ""
        return [(role + s["step"], s) for s in steps]
    return [(name, result)]


run = json.load(sys.stdin)
out = {"changed": [], "failed": [], "rows": [], "messages": [], "stats": run.get("stats", {})}
rows = {}
for play in run.get("plays", []):
    for task in play.get("tasks", []):
        for host, task_result in task.get("hosts", {}).items():
            for name, result in results(task["task"]["name"], task_result):
                if result.get("changed") and task_result.get("changed"):
                    out["changed"].append({"task": name, "host": host, "drift": result.get("drift", [])})
                if result.get("failed") and task_result.get("failed"):
                    out["failed"].append({"task": name, "host": host, "msg": result.get("msg")})
                if result.get("rows"):
                    rows[host] = result["rows"]
                msg = result.get("msg")
                if task["task"].get("name") and isinstance(msg, list):
                    out["messages"].extend(str(m) for m in msg)
out["rows"] = [r for host in sorted(rows) for r in rows[host]]
json.dump(out, sys.stdout)
