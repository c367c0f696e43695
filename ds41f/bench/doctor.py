"""The doctor before the bench: a cluster with an error row is not measured (its numbers would not be the
release's). ``--skip-doctor`` measures anyway, and the report says so."""

from __future__ import annotations

import subprocess
import sys


def run(inventory, report_dir, skip, log=print):
    """{"status": passed|failed|skipped|not run, "why", "report"}."""
    if skip:
        return {"status": "skipped", "why": "SKIPPED by --skip-doctor: the cluster was not checked before measuring"}
    if inventory is None:
        return {"status": "not run", "why": "no --inventory: a server without a cluster to check (loopback)"}
    argv = [sys.executable, "-m", "ds41f", "doctor", "-i", str(inventory), "--report-dir", str(report_dir)]
    log("doctor: %s" % " ".join(argv[1:]))
    proc = subprocess.run(argv, capture_output=True, text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
    if proc.returncode:
        return {"status": "failed", "exit": proc.returncode, "report": str(report_dir), "tail": tail,
                "why": "the doctor found errors on the cluster (exit %d); see %s/doctor.md. Fix them, or pass "
                       "--skip-doctor to measure anyway" % (proc.returncode, report_dir)}
    return {"status": "passed", "exit": 0, "report": str(report_dir), "why": "no error row"}
