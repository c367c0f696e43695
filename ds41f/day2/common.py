"""What the day-2 commands share: run their playbook quietly and collect one result per node."""

from __future__ import annotations

import json
import sys

from ds41f import paths, runs

PLAYBOOKS = paths.PLAYBOOKS / "day2"


def run(name, inventory, env, limit=None, extra=None, passthrough=()):
    """(Result, {node: msg of the task named `name`'s last debug}) of playbooks/day2/<name>.yml."""
    argv = runs.playbook_argv(PLAYBOOKS / (name + ".yml"), inventory, limit=limit,
                              extra_vars=[json.dumps(extra)] if extra else (), passthrough=passthrough)
    return runs.run_playbook(name, argv, dict(env or {}, **runs.budget_env(name)), quiet=True)


def by_rank(results):
    """[(node, msg)] in rank order."""
    return sorted(((node, res.get("msg") or {}) for node, res in results.items()),
                  key=lambda item: (int(item[1].get("rank", 1 << 30)), item[0]))


def report_failures(result, command):
    """Print every failed or unreachable node, or the run's own output when no node got that far."""
    failures = result.failures()
    for host, task, msg in failures:
        print("%s: %s: %s" % (host or "controller", task, str(msg).strip().splitlines()[0] if msg else "failed"),
              file=sys.stderr)
    if not failures and result.rc != 0:
        stdout = result.artifacts / "stdout"
        tail = stdout.read_text().splitlines()[-15:] if stdout.exists() else []
        print("\n".join(tail), file=sys.stderr)
    if result.rc != 0:
        print("ds41f %s: ansible-playbook exited %d; %s" % (command, result.rc, result.where()), file=sys.stderr)
    return failures
