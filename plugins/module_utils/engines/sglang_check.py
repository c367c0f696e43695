# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Each rank's SGLang arguments against SGLang's own argument parser (``sglang.srt.server_args``): what the image's
boot builds from the rank's environment (``server_argv``; engines/sglang.py).

SGLang's server arguments import torch and triton, so the parser runs in its own Python process with
``paths`` on its PYTHONPATH (``make sglang-parser``: sglang and a few modules over the lab engine's site). It
parses each argument list with the parser ``sglang serve`` builds (types, choices, unknown flags), then builds
``ServerArgs`` from the result as ``prepare_server_args`` does (its cross-field checks).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys

# Where the controller finds SGLang's parser when the sglang package is not in its own Python (the lab:
# .lab/shared/sglang-parser over the lab engine's site, `make sglang-parser`).
PATH_VAR = "serve_sglang_parser_path"
# The interpreter that runs it, when those folders hold another Python's wheels (the lab engine's are cp311).
PYTHON_VAR = "serve_sglang_parser_python"
NAME = "sglang"


def _verdicts(argvs):
    """In this process: SGLang's verdict (None = accepted, else its last error line) on each argument list."""
    import argparse

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    verdicts = []
    for argv in argvs:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                ServerArgs.from_cli_args(parser.parse_args(argv))
            verdicts.append(None)
        except SystemExit:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            verdicts.append(lines[-1] if lines else "rejected")
        except Exception as exc:  # ServerArgs' own checks raise ValueError and others
            verdicts.append("%s: %s" % (type(exc).__name__, exc))
    return verdicts


def errors(argvs, paths, python=None, timeout=900):
    """SGLang's verdict on each argument list (run by ``python``, else the controller's own), or a RuntimeError
    saying why the parser did not run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in paths))
    # Imported here: this file also runs as the child script, where the collection is not on sys.path.
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import parser_process

    return parser_process.verdicts(__file__, argvs, "SGLang", timeout, env, python)


def available(paths=()):
    """Whether SGLang's server arguments are importable from ``paths`` or the controller's own Python."""
    if any(os.path.isfile(os.path.join(str(p), "sglang", "srt", "server_args.py")) for p in paths or ()):
        return True
    try:
        return importlib.util.find_spec("sglang") is not None
    except (ImportError, ValueError):
        return False


def server_argv(command):
    """What SGLang's parser judges for a rank's ``command``: the arguments the image's boot builds from the rank's
    environment, which a boot command carries (engines/sglang.py, BootCommand), else the command itself."""
    return list(getattr(command, "server_argv", command))


def problems(ranks, paths=(), python=None):
    """(field, message, fix) for the controller's validation: ``ranks`` are (rank label, command) pairs, each
    command's SGLang arguments (server_argv) checked by SGLang's parser in one process; one problem per distinct
    refusal, naming the ranks it hit."""
    if not ranks or not available(paths):
        return []
    try:
        verdicts = errors([server_argv(argv) for _, argv in ranks], list(paths or ()), python)
    except RuntimeError as exc:
        return [("sglang", "%s." % exc, "repair the SGLang parser on the controller (make sglang-parser) or empty "
                 "%s." % PATH_VAR)]
    refused = {}
    for (label, _), error in zip(ranks, verdicts, strict=True):
        if error:
            refused.setdefault(error, []).append(label)
    return [("serve_args", "SGLang's argument parser refuses the arguments of rank %s: %s" % (", ".join(labels), error),
             "correct or remove the flag or the serve_env setting it names (the seed's flags are all known to SGLang "
             "0.5.23).")
            for error, labels in refused.items()]


if __name__ == "__main__":
    # This file's folder holds engines/sglang.py, which would shadow the sglang package.
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    print(json.dumps(_verdicts(json.loads(sys.stdin.read()))))
