# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""An engine's argument parser in its own Python process: vLLM and SGLang import torch, which does not import
inside Ansible's worker. The child script reads a JSON request on stdin and prints its verdicts as a JSON list
on its last ``[`` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def verdicts(script, request, engine, timeout, env=None, python=None):
    """The child's verdicts (the child run by ``python``, else this Python), or a RuntimeError naming ``engine`` and
    why its parser gave none."""
    try:
        proc = subprocess.run([python or sys.executable, os.path.abspath(script)], input=json.dumps(request), text=True,
                              capture_output=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError("%s's parser did not run: %s" % (engine, exc)) from exc
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError("%s's parser failed (exit %d): %s" % (engine, proc.returncode, tail[0]))
    return json.loads(lines[-1])
