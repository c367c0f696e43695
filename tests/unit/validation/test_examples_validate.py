"""Every example site and every molecule scenario's inventory passes the real validation play, with the group_vars
beside it and the extra vars its scenario passes: the stricter rules (unknown variables, env syntax, sizes, names,
address collisions) refuse typos, not the project's own sites. ssh is a stub that records its call and fails."""

import concurrent.futures
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

from .conftest import ssh_stub

BIN = os.path.dirname(sys.executable)
SITES = sorted(str(p.relative_to(ROOT)) for p in list(ROOT.glob("inventories/*/*.spark.yml")) +
               list(ROOT.glob("molecule/*/*.spark.yml")))
# The extra vars molecule/serve-lab/verify.yml passes with its runs (-e @file, in that order).
RUNS = [(site, ()) for site in SITES] + [
    ("molecule/serve-lab/site.spark.yml", ("molecule/serve-lab/vars/group.yml",)),
    ("molecule/serve-lab/site.spark.yml", ("inventories/ring4-sglang/group_vars/spark_cluster.yml",
                                           "molecule/serve-lab/vars/sglang.yml")),
]


def run_id(run):
    site, extra = run
    return " ".join([site] + ["-e @" + e for e in extra])


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """{run id: (rc, output)} of every run, two at a time, and the ssh stub's record."""
    root = tmp_path_factory.mktemp("examples")
    ssh, record = ssh_stub(root)

    def one(i, run):
        site, extra = run
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_SSH_EXECUTABLE=str(ssh),
                   ANSIBLE_LOCAL_TEMP=str(root / ("tmp%d" % i)), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_CACHE_PLUGIN_CONNECTION=str(root / ("facts%d" % i)),
                   PATH=BIN + os.pathsep + os.environ["PATH"])
        argv = [os.path.join(BIN, "ansible-playbook"), "-i", site, "playbooks/validate.yml"]
        for path in extra:
            argv += ["-e", "@" + path]
        proc = subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {run_id(run): pool.submit(one, i, run) for i, run in enumerate(RUNS)}
        return {key: f.result() for key, f in futures.items()}, record


def test_every_example_site_and_scenario_inventory_is_found():
    assert len(SITES) >= 16 and "inventories/lab/lab.spark.yml" in SITES
    assert all((ROOT / path).is_file() for _, extra in RUNS for path in extra)


@pytest.mark.parametrize("run", RUNS, ids=[run_id(r) for r in RUNS])
def test_it_validates(run, validated):
    results, record = validated
    rc, out = results[run_id(run)]
    assert rc == 0, out[-3000:]
    assert "launch spec of every rank rendered" in out
    assert record.read_text() == ""  # validation never reaches a node
