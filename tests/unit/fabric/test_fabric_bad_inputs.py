"""Bad input stops the fabric stage on the controller, naming the field and the fix, before any host is touched.

The sites point at TEST-NET-1 addresses (192.0.2.0/24): had any task reached a host, the run would show it."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT

BIN = Path(sys.executable).parent


def run_fabric(tmp_path, site, *extra):
    path = tmp_path / "bad.spark.yml"
    path.write_text(yaml.safe_dump(site))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(path), "playbooks/fabric.yml", *extra],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_an_override_that_reuses_a_port_fails_before_any_host(tmp_path, site):
    bad = site("tp3-triangle", 3, ssh_user="root")
    for i, node in enumerate(bad["nodes"]):
        node["address"] = "192.0.2.%d" % (11 + i)
    bad["nodes"][0]["cables"] = {0: "dgx2:1", 1: "dgx2:1"}
    rc, out = run_fabric(tmp_path, bad)
    assert rc != 0
    assert "nodes[0].cables.1: dgx2:1 is also the peer of port 0. Fix: each peer port takes one cable" in out
    assert "TASK [" not in out  # the inventory did not parse: no play started


def test_a_control_the_images_nccl_would_ignore_fails_validation(tmp_path, site):
    ring = site("tp4-ring", 4, ssh_user="root")
    for i, node in enumerate(ring["nodes"]):
        node["address"] = "192.0.2.%d" % (11 + i)
    rc, out = run_fabric(tmp_path, ring, "-e", '{"fabric_nccl_patches": ["ib-cts-acquire-fence"]}')
    assert rc != 0
    assert "NCCL_SWITCHLESS_BIDIRECTIONAL: is set, but the NCCL in the image lacks bidirectional-switchless" in out
    assert "TASK [dgxspark.ds41f.fabric" not in out and "UNREACHABLE" not in out
