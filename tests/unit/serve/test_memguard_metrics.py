"""The memory guard, installed as the serve stage installs it (the program with the collection's textfile.py beside
it as ds41f_textfile.py), writes its state for node_exporter's textfile collector; read back with the Prometheus
text parser. Without the file beside it, it still guards and writes no metrics."""

import json
import shutil
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from .conftest import ROOT
from .test_memguard import MEMINFO

GUARD = ROOT / "roles" / "serve" / "files" / "ds41f-memguard.py"
TEXTFILE = ROOT / "plugins" / "module_utils" / "textfile.py"


def run_installed(tmp_path, available_kb, with_textfile=True):
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(GUARD, lib / "ds41f-memguard.py")
    if with_textfile:
        shutil.copy(TEXTFILE, lib / "ds41f_textfile.py")
    (tmp_path / "meminfo").write_text(MEMINFO % available_kb)
    config = {"container": "ds41f-test-no-such-container", "phase": "steady", "threshold_gib": 3,
              "interval_s": 0.05, "state_file": str(tmp_path / "run" / "state.json"),
              "meminfo": str(tmp_path / "meminfo"), "textfile_dir": str(tmp_path / "node-exporter")}
    (tmp_path / "guard.json").write_text(json.dumps(config))
    return subprocess.run([sys.executable, str(lib / "ds41f-memguard.py"), str(tmp_path / "guard.json")],
                          capture_output=True, text=True, timeout=10)


def test_a_trip_is_in_the_textfile_metrics_and_they_parse(tmp_path):
    assert run_installed(tmp_path, 2 * 1024 * 1024).returncode == 1  # 2 GiB free, 3 GiB guard: tripped
    text = (tmp_path / "node-exporter" / "ds41f_memguard.prom").read_text()
    found = {f.name: f.samples[0] for f in text_string_to_metric_families(text)}
    assert found["ds41f_memguard_tripped"].value == 1 and found["ds41f_memguard_tripped"].labels == {
        "phase": "steady"}
    assert found["ds41f_memguard_threshold_gib"].value == 3 and found["ds41f_memguard_mem_available_gib"].value == 2


def test_without_the_writer_beside_it_the_guard_still_trips(tmp_path):
    assert run_installed(tmp_path, 2 * 1024 * 1024, with_textfile=False).returncode == 1
    assert not (tmp_path / "node-exporter").exists()
