# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Commands that run all at once on a node: a node pings up to 14 peers, and one at a time (run_command) would
add their timeouts up."""

from __future__ import annotations

import subprocess


def run_all(argvs):
    """Start every command, then wait for each: [(rc, stdout, stderr)] in the order given."""
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in argvs]
    results = []
    for proc in procs:
        out, err = proc.communicate()
        results.append((proc.returncode, out, err))
    return results
