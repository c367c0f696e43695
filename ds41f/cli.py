"""`ds41f`: the lab and the stages from one command (a thin layer over ansible-runner)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ds41f import paths


def stages():
    return sorted(p.stem for p in paths.PLAYBOOKS.glob("*.yml"))


def lab_name(site, name=None):
    from ds41f.lab.cluster import find_site

    return name or find_site(site).resolve().parent.name


def cmd_lab(args):
    from ds41f.lab import cluster, podman

    try:
        if args.lab_cmd == "up":
            site_path, raw, model = cluster.load(args.site)
            cluster.Lab(lab_name(args.site, args.name)).up(site_path, raw, model)
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
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
