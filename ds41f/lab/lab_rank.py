#!/usr/bin/env python3
"""The lab engine image's `vllm`: one serving rank, given the rank's rendered `vllm serve` arguments.

``ds41f.lab.engine build`` copies this file to .lab/shared/engine/bin/lab-rank (bin/lab/vllm links to it); lab nodes
bind-mount that folder read-only at /opt/ds41f-lab/engine. The image's ENTRYPOINT is the vLLM OpenAI image's,
``vllm serve``, and its PATH finds this file as ``vllm``, so a rank runs exactly the serve stage's rendered
arguments (``/models --tensor-parallel-size 3 --nnodes 3 --node-rank 1 ... [--headless]``) after ``serve``.
Any other ``vllm`` subcommand goes to vLLM as it is.

Because the CPU build on this 2-core lab machine cannot hold one ~2 GB vLLM process per rank:
- rank 0 (no --headless) serves for real, tensor parallel 1: the multi-node flags are dropped (and printed),
  and `vllm serve`'s own parser checks the rest;
- a worker (--headless) puts its whole command, group flags included, through vLLM's argument parser (unknown
  flags, wrong types and vLLM's own cross-flag checks fail the rank), checks that its model folder is readable,
  says that it is a stand-in, and holds its slot (the container keeps running) until it is stopped.

With ``DS41F_LAB_GROUP=N`` in the container's env (N >= 2), ranks 0 to N-1 form a real tensor-parallel group of
N instead: their rendered command runs as it is (rendezvous address and port, --headless, the env the serve
stage gave them), with only --tensor-parallel-size and --nnodes lowered to N; the ranks above N stand in as
workers do without it. Two CPU ranks are what fits on this machine (docs/lab-engine.md).

    lab-rank serve /models ...        run one rank
    lab-rank --check < argvs.json     parse a JSON list of argument lists; print one JSON result per list
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys

ENGINE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
SITE = os.path.join(ENGINE, "site")
# Flags that place a rank in a multi-node group; rank 0 drops them to serve alone in the lab.
GROUP_FLAGS = ("--tensor-parallel-size", "-tp", "--nnodes", "--node-rank", "--master-addr", "--master-port")
GROUP_SWITCHES = ("--headless",)


def say(message):
    print("lab-rank: %s" % message, flush=True)


def serve_parser():
    if SITE not in sys.path:
        sys.path.insert(0, SITE)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    command = ServeSubcommand()
    command.subparser_init(parser.add_subparsers(dest="subparser"))
    return parser, command


def parse_error(parser, command, argv):
    """None when vLLM accepts ``argv`` (``serve ...``), else vLLM's own message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
            command.validate(args)
    except SystemExit:
        lines = [line for line in err.getvalue().strip().splitlines() if line.strip()]
        return lines[-1] if lines else "rejected"
    except Exception as exc:  # vLLM's own cross-flag checks raise ValueError / TypeError
        return "%s: %s" % (type(exc).__name__, exc)
    return None


def split_group(argv):
    """(argv without the multi-node flags, the dropped flags)."""
    kept, dropped, skip = [], [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in GROUP_SWITCHES:
            dropped.append(arg)
        elif name in GROUP_FLAGS:
            dropped.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                dropped.append(argv[i + 1])
                skip = True
        else:
            kept.append(arg)
    return kept, dropped


def flag_value(argv, flag, default=None):
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return default


def set_flag(argv, flag, value):
    """``argv`` with ``flag``'s value replaced (flag and value as two elements, or flag=value)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == flag and i + 1 < len(out):
            out[i + 1] = value
        elif arg.startswith(flag + "="):
            out[i] = "%s=%s" % (flag, value)
    return out


def lab_group():
    """The lab group's size from DS41F_LAB_GROUP: 0 when unset, else a whole number of at least 2."""
    text = os.environ.get("DS41F_LAB_GROUP", "").strip()
    if not text:
        return 0
    if not text.isdigit() or int(text) < 2:
        raise ValueError("DS41F_LAB_GROUP=%r is not a group size. Fix: 2 or more, or leave it unset" % text)
    return int(text)


def run_vllm(argv):
    env = dict(os.environ, PYTHONPATH=SITE, VLLM_TARGET_DEVICE="cpu")
    for key, value in (("HF_HUB_OFFLINE", "1"), ("VLLM_NO_USAGE_STATS", "1"), ("DO_NOT_TRACK", "1")):
        env.setdefault(key, value)
    os.execve(sys.executable, [sys.executable, "-m", "vllm.entrypoints.cli.main", *argv], env)


def check_mode():
    parser, command = serve_parser()
    for argv in json.load(sys.stdin):
        print(json.dumps({"argv": argv, "error": parse_error(parser, command, argv)}), flush=True)
    return 0


def hold(rank, group):
    serves = "in a group of ranks 0-%d" % (group - 1) if group else "from rank 0 alone"
    say("rank %s: headless worker stand-in holding its slot (the CPU lab serves %s)" % (rank, serves))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


def main(argv):
    if argv[:1] == ["--check"]:
        return check_mode()
    if argv[:1] != ["serve"]:
        if os.path.basename(sys.argv[0]) == "vllm":
            run_vllm(argv)  # not a serving rank: vLLM's own command line
        say("expected a `vllm serve` command line (serve MODEL ...), got %r" % argv[:2])
        return 2
    rank = flag_value(argv, "--node-rank", "0")
    model = argv[1] if len(argv) > 1 and not argv[1].startswith("-") else flag_value(argv, "--model")
    try:
        group = lab_group()
    except ValueError as exc:
        say("rank %s: %s" % (rank, exc))
        return 2
    if group and int(rank) < group:
        rendered = flag_value(argv, "--tensor-parallel-size") or flag_value(argv, "-tp")
        say("rank %s: in a lab group of %d (tensor parallel %d of the rendered %s), rendezvous %s:%s" % (
            rank, group, group, rendered, flag_value(argv, "--master-addr"), flag_value(argv, "--master-port")))
        for flag in ("--tensor-parallel-size", "-tp", "--nnodes"):
            argv = set_flag(argv, flag, str(group))
        run_vllm(argv)
    if "--headless" in argv:
        # Workers check the whole command, group flags included; rank 0's own vllm serve parses the rest.
        parser, command = serve_parser()
        error = parse_error(parser, command, argv)
        if error:
            say("rank %s: vLLM rejects the rendered command: %s" % (rank, error))
            return 2
        say("rank %s: vLLM %s accepts the rendered command (%d arguments)" % (
            rank, __import__("vllm").__version__, len(argv) - 1))
        if not model or not os.access(os.path.join(model, "config.json"), os.R_OK):
            say("rank %s: model folder %s is not readable (no config.json): this rank cannot load weights" % (
                rank, model))
            return 3
        return hold(rank, group)
    kept, dropped = split_group(argv)
    if dropped:
        say("rank %s: serving alone, tensor parallel 1; dropped for the lab: %s" % (rank, " ".join(dropped)))
    run_vllm(kept)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
