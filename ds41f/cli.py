"""`ds41f`: the lab and the stages from one command (a thin layer over ansible-runner)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ds41f import paths


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
    return 0


def parse_end(text):
    """'dgx2:1' -> ('dgx2', 1)."""
    node, _, port = text.partition(":")
    if not node or port not in ("0", "1"):
        raise SystemExit("ds41f lab cable: %r is not NODE:PORT (port 0 or 1)." % text)
    return node, int(port)


def inventory_for(args):
    """(inventories, extra environment): the given ones, or the lab's with its own fact cache."""
    if args.inventory:
        return args.inventory, {}
    name = args.lab or "lab"
    state = paths.LAB_STATE / name
    if not (state / "inventory").exists():
        raise SystemExit("ds41f run: no inventory given and no lab %r is up. Fix: -i inventories/<site> "
                         "or ds41f lab up inventories/lab" % name)
    # Lab nodes of different labs share host names (dgx1...): keep their cached facts apart.
    return [str(state / "inventory")], {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(state / "facts")}


def cmd_run(args):
    import ansible_runner

    if args.stage not in stages():
        print("ds41f run: no stage %r. Stages: %s" % (args.stage, ", ".join(stages())), file=sys.stderr)
        return 2
    cmdline = []
    if args.check:
        cmdline.append("--check")
    if args.diff:
        cmdline.append("--diff")
    if args.limit:
        cmdline += ["--limit", args.limit]
    for extra in args.extra_vars or []:
        cmdline += ["-e", extra]
    inventory, env = inventory_for(args)
    # The ansible tools installed beside this Python, also when ds41f is called without activating its venv.
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    runner_dir = paths.ROOT / ".ansible" / "runner"
    runner_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    result = ansible_runner.run(
        private_data_dir=str(runner_dir),
        project_dir=str(paths.ROOT),
        playbook=str(paths.PLAYBOOKS / (args.stage + ".yml")),
        inventory=inventory,
        cmdline=" ".join(cmdline) or None,
        envvars=dict(env, ANSIBLE_CONFIG=str(paths.ROOT / "ansible.cfg")),
        quiet=False,
    )
    print("ds41f run %s: %s in %.0f s" % (args.stage, result.status, time.monotonic() - start))
    return result.rc


def doctor_env(report_dir):
    """What a doctor run needs besides --check: its callback prints the drift table instead of task output
    (listing it in callbacks_enabled too keeps ansible.cfg's per-task timing callback out) and writes here."""
    return {"ANSIBLE_STDOUT_CALLBACK": "dgxspark.ds41f.drift_report",
            "ANSIBLE_CALLBACKS_ENABLED": "dgxspark.ds41f.drift_report", "DS41F_REPORT_DIR": str(report_dir)}


def cmd_doctor(args):
    """doctor.yml in check mode with the drift_report callback; its exit status is the doctor's verdict."""
    inventory, env = inventory_for(args)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    report = Path(args.report_dir or paths.ROOT / "reports" / "doctor" / stamp).resolve()
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--check",
            str(paths.PLAYBOOKS / "doctor.yml")]
    for inv in inventory:
        argv += ["-i", inv]
    for flag, value in (("--limit", args.limit), ("--tags", args.tags), ("--skip-tags", args.skip_tags)):
        if value:
            argv += [flag, value]
    for extra in args.extra_vars or []:
        argv += ["-e", extra]
    env = dict(os.environ, **env, **doctor_env(report), ANSIBLE_CONFIG=str(paths.ROOT / "ansible.cfg"))
    return subprocess.run(argv, env=env, cwd=str(paths.ROOT)).returncode


def cmd_picture(args):
    """The topology picture of a site file, not checked (grey): what docs/img shows for the example sites."""
    from ds41f.lab.cluster import load

    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology_picture

    _, _, model = load(args.site)
    for path in topology_picture.draw(topology_picture.layout(model), args.out + ".svg", args.out + ".png"):
        print(path)
    return 0


def cmd_bench(args):
    from ds41f.bench import cli as bench_cli

    return bench_cli.run(args)


def parser():
    p = argparse.ArgumentParser(prog="ds41f", description=__doc__)
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

    run = sub.add_parser("run", help="run one stage playbook (or site for all)")
    run.add_argument("stage")
    run.add_argument("-i", "--inventory", action="append", help="inventory (default: the lab's)")
    run.add_argument("--lab", help="use the inventory of this lab (default: lab)")
    run.add_argument("--check", action="store_true")
    run.add_argument("--diff", action="store_true")
    run.add_argument("--limit")
    run.add_argument("-e", "--extra-vars", action="append")
    run.set_defaults(func=cmd_run)

    doctor = sub.add_parser("doctor", help="every stage in check mode plus live checks: one drift table, "
                                           "non-zero exit on any error; changes nothing")
    doctor.add_argument("-i", "--inventory", action="append", help="inventory (default: the lab's)")
    doctor.add_argument("--lab", help="use the inventory of this lab (default: lab)")
    doctor.add_argument("--limit")
    doctor.add_argument("--tags", help="only these stages (site.yml tags them by name), e.g. fabric,serve")
    doctor.add_argument("--skip-tags", help="leave these stages out, e.g. model,image")
    doctor.add_argument("-e", "--extra-vars", action="append")
    doctor.add_argument("--report-dir", help="where doctor.json, doctor.md and topology.svg/png go "
                                             "(default: reports/doctor/<UTC time>)")
    doctor.set_defaults(func=cmd_doctor)

    picture = sub.add_parser("picture", help="draw a site's topology (nodes, cables, paths, addresses) as SVG and PNG")
    picture.add_argument("site", help="site file or folder holding one (*.spark.yml)")
    picture.add_argument("out", help="output path without extension (OUT.svg and OUT.png are written)")
    picture.set_defaults(func=cmd_picture)

    from ds41f.bench import cli as bench_cli

    bench_cli.add_parser(sub).set_defaults(func=cmd_bench)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
