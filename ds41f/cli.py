"""`ds41f`: the lab and the stages from one command (a thin layer over ansible-runner)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import ds41f
from ds41f import paths, runs, secret_env

EXIT_CODES = """exit status:
  0      ok
  1      a check found errors (ds41f doctor: an error in the drift table; ds41f status: a node or the head's
         API is not as it should be; ds41f logs: a rank has no engine log; ds41f render --compare: a difference
         from the recorded production launch that the reviewed list does not give, or an entry no rank shows;
         ds41f hostkeys: a node that answers another key than the pinned one, or none)
  2      bad usage or input (an unknown stage or option, no inventory, a bad site or recipe)
  other  ds41f run passes ansible-playbook's own status through unchanged (2: a task failed on a host,
         4: a host was unreachable or a file did not parse, 5: bad options, 99: interrupted, 250: unexpected);
         so do doctor, status, logs and render when their playbook cannot get as far as their check.

what follows `--` goes to ansible-playbook as it is, e.g.
  ds41f run site -- --tags fabric,serve --skip-tags model -v --forks 8 --start-at-task "Start the head's rank"
every ansible-playbook run prints where its artifacts are (.ansible/runs/<time>-<name>-<pid>/artifacts:
stdout, job_events/, rc, command)."""


def stages():
    return sorted(p.stem for p in paths.PLAYBOOKS.glob("*.yml"))


def lab_name(site, name=None):
    from ds41f.lab.cluster import find_site

    return name or find_site(site).resolve().parent.name


def cmd_lab(args):
    from ds41f.lab import cables, cluster, podman

    try:
        if args.lab_cmd == "up":
            site_path, raw, model = cluster.load(args.site)
            cluster.Lab(lab_name(args.site, args.name)).up(site_path, raw, model)
        elif args.lab_cmd == "cable":
            lab = cluster.Lab(args.name)
            _, _, model = cluster.load(lab.inventory / "hosts.spark.yml")
            ends = [parse_end(text) for text in (args.end_a, args.end_b)]
            far = cables.swap(lab.container, lab.state, model, *ends)
            for end, new in zip(ends, far, strict=True):
                print("%s:%d now reaches %s:%d" % (*end, *new))
        elif args.lab_cmd == "image-inputs":
            from ds41f.lab import image_inputs

            print(image_inputs.ensure())
        elif args.lab_cmd == "down":
            target = args.target
            name = target if target in cluster.all_labs() or "/" not in target else lab_name(target)
            cluster.Lab(name).down()
        else:
            labs = [args.name] if args.name else cluster.all_labs()
            if not labs:
                print("no labs")
            for name in labs:
                rows = cluster.Lab(name).status()
                print("lab %s: %d nodes" % (name, len(rows)))
                for node, container, state in rows:
                    print("  %-10s %-28s %s" % (node, container, state))
    except podman.LabError as exc:
        print("ds41f lab: %s" % exc, file=sys.stderr)
        return 2
    except FileNotFoundError as exc:  # a tool the lab runs (podman, mmdebstrap, ip, ssh-keygen) is not installed
        from ds41f.lab import prereqs

        print("ds41f lab: %s is not installed. Fix: %s (or make demo, which installs what is missing)" % (
            exc.filename, prereqs.fix_for(exc.filename)), file=sys.stderr)
        return 2
    return 0


def parse_end(text):
    """'dgx2:1' -> ('dgx2', 1)."""
    node, _, port = text.partition(":")
    if not node or port not in ("0", "1"):
        print("ds41f lab cable: %r is not NODE:PORT (port 0 or 1)." % text, file=sys.stderr)
        raise SystemExit(2)
    return node, int(port)


def inventory_for(args):
    """(inventories, extra environment): the given ones, or the lab's with its own fact cache."""
    if args.inventory:
        return args.inventory, {}
    name = args.lab or "lab"
    state = paths.LAB_STATE / name
    if not (state / "inventory").exists():
        print("ds41f %s: no inventory given and no lab %r is up. Fix: -i inventories/<site> or ds41f lab up "
              "inventories/lab" % (args.cmd, name), file=sys.stderr)
        raise SystemExit(2)
    # Lab nodes of different labs share host names (dgx1...): keep their cached facts apart.
    return [str(state / "inventory")], {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(state / "facts")}


def cmd_run(args):
    """One stage playbook with exactly this call's flags (ds41f/runs.py): nothing of an earlier call is replayed."""
    if args.stage not in stages():
        print("ds41f run: no stage %r. Stages: %s" % (args.stage, ", ".join(stages())), file=sys.stderr)
        return 2
    inventory, env = inventory_for(args)
    argv = runs.playbook_argv(paths.PLAYBOOKS / (args.stage + ".yml"), inventory, check=args.check, diff=args.diff,
                              limit=args.limit, extra_vars=args.extra_vars, passthrough=args.passthrough)
    result = runs.run_playbook(args.stage, argv, env)
    print("ds41f run %s: exit %d in %.0f s; %s" % (args.stage, result.rc, result.seconds, result.where()))
    return result.rc


def doctor_env(report_dir, png=False):
    """What a doctor run needs besides --check: its callback prints the drift table instead of task output
    (listing it in callbacks_enabled too keeps ansible.cfg's per-task timing callback out) and writes here."""
    return {"ANSIBLE_STDOUT_CALLBACK": "dgxspark.ds41f.drift_report",
            "ANSIBLE_CALLBACKS_ENABLED": "dgxspark.ds41f.drift_report", "DS41F_REPORT_DIR": str(report_dir),
            "DS41F_DOCTOR_PNG": "1" if png else "0"}


def doctor_errors(report):
    """Errors counted in the doctor's report (doctor.json), or None when it wrote none."""
    try:
        return int(json.loads((report / "doctor.json").read_text())["counts"]["error"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def cmd_doctor(args):
    """doctor.yml in check mode with the drift_report callback: exit 1 when its table holds an error, else
    ansible-playbook's own status."""
    inventory, env = inventory_for(args)
    report = Path(args.report_dir or paths.ROOT / "reports" / "doctor" / paths.stamp()).resolve()
    passthrough = list(args.passthrough)
    for flag, value in (("--tags", args.tags), ("--skip-tags", args.skip_tags)):
        if value:
            passthrough += [flag, value]
    argv = [runs.tool("ansible-playbook")] + runs.playbook_argv(
        paths.PLAYBOOKS / "doctor.yml", inventory, check=True, limit=args.limit,
        extra_vars=list(args.extra_vars) + (['{"ds41f_collective": true}'] if args.collective else [])
        + (['{"ds41f_deep": true}'] if args.deep else []),
        passthrough=passthrough)
    result = runs.run_tee("doctor", argv, dict(env, **doctor_env(report, args.png), **runs.budget_env("doctor")))
    errors = doctor_errors(report)
    rc = 1 if errors else result.rc
    print("ds41f doctor: exit %d in %.0f s; report: %s; %s" % (rc, result.seconds, report, result.where()))
    return rc


def cmd_status(args):
    from ds41f.day2 import status

    return status.main(*inventory_for(args), limit=args.limit, passthrough=args.passthrough)


def cmd_logs(args):
    from ds41f.day2 import logs

    if args.lines < 0:
        print("ds41f logs: --lines %d: give 0 or more lines." % args.lines, file=sys.stderr)
        return 2
    return logs.main(*inventory_for(args), node=args.node, lines=args.lines, follow_on=args.follow,
                     passthrough=args.passthrough)


def cmd_render(args):
    from ds41f.day2 import render

    return render.main(*inventory_for(args), node=args.node, one_line=args.one_line, passthrough=args.passthrough,
                       compare_recorded=args.compare)


def cmd_picture(args):
    """The topology picture of a site file, not checked (grey): what docs/img shows for the example sites."""
    from ds41f.lab.cluster import load

    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology_picture

    _, _, model = load(args.site)
    for path in topology_picture.draw(topology_picture.layout(model), args.out + ".svg", args.out + ".png"):
        print(path)
    return 0


def cmd_collective(args):
    from ds41f import collective_cli

    return collective_cli.run(args, inventory_for)


def cmd_hostkeys(args):
    from ds41f import hostkeys

    return hostkeys.run(args)


def cmd_bench(args):
    from ds41f.bench import cli as bench_cli

    return bench_cli.run(args)


def where(command):
    """-i and --lab: which cluster."""
    command.add_argument("-i", "--inventory", action="append", help="inventory (default: the lab's)")
    command.add_argument("--lab", help="use the inventory of this lab (default: lab)")


def versions():
    from importlib import metadata

    try:
        core = metadata.version("ansible-core")
    except metadata.PackageNotFoundError:
        core = "not installed"
    return "ds41f %s (collection dgxspark.ds41f, ansible-core %s, Python %s)" % (
        ds41f.__version__, core, sys.version.split()[0])


def parser():
    p = argparse.ArgumentParser(prog="ds41f", description=__doc__, epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=versions())
    sub = p.add_subparsers(dest="cmd", required=True)

    lab = sub.add_parser("lab", help="the local container cluster")
    lab_sub = lab.add_subparsers(dest="lab_cmd", required=True)
    up = lab_sub.add_parser("up", help="build the node image if missing, start and wire the nodes")
    up.add_argument("site", help="site file or folder holding one (*.spark.yml)")
    up.add_argument("--name", help="lab name (default: the site folder's name)")
    down = lab_sub.add_parser("down", help="remove what `up` made")
    down.add_argument("target", help="lab name, or its site")
    cable = lab_sub.add_parser("cable", help="move lab cables (miswire tests)")
    cable.add_argument("action", choices=["swap"], help="swap: exchange the far ends of the cables at two ports")
    cable.add_argument("name", help="lab name")
    cable.add_argument("end_a", help="NODE:PORT, e.g. dgx2:0")
    cable.add_argument("end_b", help="NODE:PORT, e.g. dgx2:1")
    lab_sub.add_parser("image-inputs", help="the minbase tarball, source repository and pinned lock the lab's "
                       "image stage builds from (.lab/shared)")
    status = lab_sub.add_parser("status", help="list lab nodes")
    status.add_argument("name", nargs="?")
    lab.set_defaults(func=cmd_lab)

    run = sub.add_parser("run", help="run one stage playbook (or site for all)",
                         epilog="after `--`: ansible-playbook's own flags, e.g. -- --tags fabric -v")
    run.add_argument("stage")
    where(run)
    run.add_argument("--check", action="store_true")
    run.add_argument("--diff", action="store_true")
    run.add_argument("--limit")
    run.add_argument("-e", "--extra-vars", action="append", default=[],
                     help="as ansible-playbook takes it (JSON, key=value or @file), once per -e")
    run.set_defaults(func=cmd_run)

    doctor = sub.add_parser("doctor", help="every stage in check mode plus live checks: one drift table, "
                                           "exit 1 on any error; changes nothing")
    where(doctor)
    doctor.add_argument("--limit")
    doctor.add_argument("--tags", help="only these stages (site.yml tags them by name), e.g. fabric,serve")
    doctor.add_argument("--skip-tags", help="leave these stages out, e.g. model,image")
    doctor.add_argument("-e", "--extra-vars", action="append", default=[])
    doctor.add_argument("--collective", action="store_true", help="also run the collective check (ds41f "
                                                                   "collective): a failing rank is a row")
    doctor.add_argument("--deep", action="store_true", help="first hash every file of every node's checkpoint in "
                        "full (the model stage's scrub, which its timer runs every model_scrub_period), each node "
                        "within model_scrub_timeout; a file whose bytes changed under a kept size and mtime is a row")
    doctor.add_argument("--report-dir", help="where doctor.json, doctor.md and topology.svg go "
                                             "(default: reports/doctor/<UTC time>)")
    doctor.add_argument("--png", action="store_true", help="also draw the picture as topology.png (matplotlib, "
                                                           "about half a second)")
    doctor.set_defaults(func=cmd_doctor)

    status = sub.add_parser("status", help="one line per node (rank, kernel, fabric paths, engine, guard, free "
                                           "memory) and the head's API; read-only; exit 1 if anything is off")
    where(status)
    status.add_argument("--limit")
    status.set_defaults(func=cmd_status)

    logs = sub.add_parser("logs", help="the engine container's log per rank, each line after its node's name")
    logs.add_argument("node", nargs="?", help="one node, or a pattern as --limit takes it (default: all)")
    where(logs)
    logs.add_argument("-f", "--follow", action="store_true", help="keep following (one ssh per node) until Ctrl-C")
    logs.add_argument("-n", "--lines", type=int, default=50, help="last lines per rank (default: 50)")
    logs.set_defaults(func=cmd_logs)

    render = sub.add_parser("render", help="the docker run line each rank runs, from the serve stage's launch "
                                           "spec; never connects to a node")
    render.add_argument("node", nargs="?", help="one node, or a pattern as --limit takes it (default: all)")
    where(render)
    render.add_argument("--one-line", action="store_true", help="each command on one line")
    render.add_argument("--compare", action="store_true", help="instead: each rank's launch beside the recorded "
                        "production launch of its shape (tests/fixtures/release/), every difference with the reviewed "
                        "reason; exit 1 when one is not reviewed")
    render.set_defaults(func=cmd_render)

    picture = sub.add_parser("picture", help="draw a site's topology (nodes, cables, paths, addresses) as SVG and PNG")
    picture.add_argument("site", help="site file or folder holding one (*.spark.yml)")
    picture.add_argument("out", help="output path without extension (OUT.svg and OUT.png are written)")
    picture.set_defaults(func=cmd_picture)

    from ds41f import hostkeys

    hostkeys.add_parser(sub, where).set_defaults(func=cmd_hostkeys)
    from ds41f.bench import cli as bench_cli

    bench_cli.add_parser(sub).set_defaults(func=cmd_bench)
    from ds41f import collective_cli

    collective_cli.add_parser(sub, where).set_defaults(func=cmd_collective)
    return p


PASSTHROUGH = ("run", "doctor", "status", "logs", "render", "collective")


def main(argv=None):
    """Everything after the first `--` goes to ansible-playbook unchanged (run, doctor and the day-2 commands).
    Secrets leave this process's environment first, so nothing it starts inherits one (ds41f/secret_env.py)."""
    secret_env.hold()
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough = []
    if "--" in argv:
        at = argv.index("--")
        argv, passthrough = argv[:at], argv[at + 1:]
    p = parser()
    args = p.parse_args(argv)
    if passthrough and args.cmd not in PASSTHROUGH:
        p.error("ds41f %s takes no ansible-playbook flags after `--`" % args.cmd)
    args.passthrough = passthrough
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
