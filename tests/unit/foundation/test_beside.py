"""tests/beside.sh, how make test runs the container-free checks beside the lab: in a session of its own at a low
autogroup weight (where the kernel has autogroups), nice 19 and the idle I/O class."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_the_command_runs_at_nice_19_in_the_idle_io_class_and_its_exit_status_comes_back():
    out = subprocess.run(["setsid", str(ROOT / "tests" / "beside.sh"), "sh", "-c", "nice; ionice; exit 3"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 3
    assert out.stdout.split("\n")[:2] == ["19", "idle"]


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel has no autogroups: nice alone")
def test_its_session_weighs_as_an_autogroup_at_nice_10():
    out = subprocess.run(["setsid", str(ROOT / "tests" / "beside.sh"), "cat", "/proc/self/autogroup"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip().endswith("nice 10"), out
