"""Summarise an ansible-playbook run printed by the ansible.posix.json callback (stdin) as compact JSON.

changed: [{task, host, drift}], failed: [{task, host, msg}], rows: fabric_check rows of every host,
messages: the msg lines of debug tasks, stats: per host.
"""

import json
import sys

run = json.load(sys.stdin)
out = {"changed": [], "failed": [], "rows": [], "messages": [], "stats": run.get("stats", {})}
for play in run.get("plays", []):
    for task in play.get("tasks", []):
        name = task["task"]["name"]
        for host, result in task.get("hosts", {}).items():
            if result.get("changed"):
                out["changed"].append({"task": name, "host": host, "drift": result.get("drift", [])})
            if result.get("failed"):
                out["failed"].append({"task": name, "host": host, "msg": result.get("msg")})
            out["rows"].extend(result.get("rows") or [])
            msg = result.get("msg")
            if task["task"].get("name") and isinstance(msg, list):
                out["messages"].extend(str(m) for m in msg)
json.dump(out, sys.stdout)
