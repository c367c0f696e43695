"""`ds41f collective`: the serve stage's collective check on its own (playbooks/collective.yml).

Every rank forms the engine's torch.distributed group in the engine's image, with the rendezvous and
environment the engine will get, and checks an all-reduce and an all-gather bit for bit; nothing is left
running. The verdict and the per-rank join time and bandwidth are printed and kept as JSON
(reports/collective/<UTC time>.json, or --report). Exit 0 when every rank passed, 1 when the check named a
failing rank, else ansible-playbook's own status.
"""

from __future__ import annotations

import json
from pathlib import Path

from ds41f import paths, runs


def add_parser(sub, where):
    p = sub.add_parser("collective", help="every rank joins the engine's group and checks an all-reduce and an "
                                          "all-gather bit for bit (no engine needed); join time, bandwidth")
    where(p)
    p.add_argument("--limit")
    p.add_argument("--port", type=int, help="master port to meet on (default: the rendered serve_master_port; "
                                            "one above it while the head serves)")
    p.add_argument("--timeout", type=int, help="seconds every rank has to join (serve_collective_timeout_s)")
    p.add_argument("--size-mib", type=float, help="size of the timed all-reduce (serve_collective_size_mib)")
    p.add_argument("--report", help="where the verdict goes as JSON (default: reports/collective/<UTC time>.json)")
    p.add_argument("-e", "--extra-vars", action="append", default=[])
    return p


def extra_vars(args, report):
    values = {"collective_report": str(report)}
    for name, value in (("serve_collective_master_port", args.port), ("serve_collective_timeout_s", args.timeout),
                        ("serve_collective_size_mib", args.size_mib)):
        if value is not None:
            values[name] = value
    return [json.dumps(values, sort_keys=True)] + list(args.extra_vars)


def read_verdict(report):
    try:
        return json.loads(Path(report).read_text())
    except (OSError, ValueError):
        return None


def run(args, inventory_for):
    inventory, env = inventory_for(args)
    report = Path(args.report or paths.ROOT / "reports" / "collective" / (paths.stamp() + ".json")).resolve()
    report.parent.mkdir(parents=True, exist_ok=True)
    if report.exists():
        report.unlink()  # a verdict left from an earlier call must not be read as this one's
    argv = runs.playbook_argv(paths.PLAYBOOKS / "collective.yml", inventory, limit=args.limit,
                              extra_vars=extra_vars(args, report), passthrough=args.passthrough)
    result = runs.run_playbook("collective", argv, env)
    verdict = read_verdict(report)
    if verdict is not None:
        print(verdict["message"])
        print("\n".join(verdict.get("lines") or []))
    rc = 1 if verdict is not None and not verdict.get("ok") else result.rc
    print("ds41f collective: exit %d in %.0f s; verdict: %s; %s" % (
        rc, result.seconds, report if verdict is not None else "none written", result.where()))
    return rc
