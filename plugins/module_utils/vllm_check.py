# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Rendered ``vllm serve`` commands against vLLM's own argument parser, where the controller has vLLM.

The pinned build is a patched vLLM; the flags only it knows (``serve_patched_flags``, per release) are taken
out first. Without vLLM on the controller nothing is checked here (``available()`` is False): the worker
ranks still put their commands through the parser on the node before the group starts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys


def available():
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def strip_flags(argv, flags):
    """``argv`` without ``flags`` and their values (a value is the next word unless it starts with --)."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg.split("=", 1)[0] in flags:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            skip = "=" not in arg and nxt is not None and not nxt.startswith("--")
            continue
        out.append(arg)
    return out


def _verdicts(argvs, patched):
    """In this process: vLLM's verdict (None = accepted, else its message) on each argument list."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    command = ServeSubcommand()
    command.subparser_init(parser.add_subparsers(dest="subparser"))
    verdicts = []
    for argv in argvs:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                command.validate(parser.parse_args(strip_flags(argv, patched)))
            verdicts.append(None)
        except SystemExit:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            verdicts.append(lines[-1] if lines else "rejected")
        except Exception as exc:  # vLLM's cross-flag checks raise ValueError / TypeError
            verdicts.append("%s: %s" % (type(exc).__name__, exc))
    return verdicts


def errors(argvs, patched=()):
    """vLLM's verdict on each ``serve ...`` argument list, or a RuntimeError saying why the parser did not run.

    The parser runs in its own Python process: vLLM (torch) does not import inside Ansible's worker.
    """
    # Imported here: this file also runs as the child script, where the collection is not on sys.path.
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import parser_process

    return parser_process.verdicts(__file__, {"argvs": argvs, "patched": list(patched)}, "vLLM", 600)


if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(_verdicts(request["argvs"], request["patched"])))
