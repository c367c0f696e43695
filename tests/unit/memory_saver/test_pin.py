"""The memory saver's pin comes from the user: on a DGX Spark the stage refuses, naming the variable, until both the
commit and the module's srcversion are set; off a Spark (the lab) the checks are skipped.

The play runs the role's own install tasks on localhost, in check mode, with the node reading given
(the fact ``ds41f_node``). The refusals are its first tasks, so a refused run stops before anything else; off a
Spark the later tasks only read and report "not a DGX Spark".
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

BIN = sys.executable.rsplit("/", 1)[0]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SRCVERSION = "3F0C9A2B1D4E5F60718293A"


def run_pin(tmp_path, spark, ref, srcversion):
    play = tmp_path / "pin.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  connection: local\n  tasks:\n"
        # The node reading as node_facts returns it: a fact (ansible_facts.ds41f_node), not a variable.
        "    - name: The node reading\n"
        "      ansible.builtin.set_fact: {ds41f_node: {dgx_spark: %s}, cacheable: true}\n"
        "    - name: The pin checks of the role\n"
        "      ansible.builtin.include_tasks: %s/roles/memory_saver/tasks/present.yml\n" % (spark, ROOT))
    extra = {"memory_saver_source_ref": ref, "memory_saver_srcversion": srcversion,
             "memory_saver_version": "0.4.1", "kernel_release": "7.0.0-1019-nvidia-64k",
             "memory_saver_key_dir": str(tmp_path / "keys")}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_DISPLAY_SKIPPED_HOSTS="true")
    # --check: the tasks after the refusals only read (the lab reading: not a DGX Spark)
    proc = subprocess.run([BIN + "/ansible-playbook", "-i", "localhost,", str(play), "--check",
                           "-e", json.dumps(extra), "-e", "ansible_python_interpreter=" + sys.executable],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("ref,srcversion,variable", [
    ("", SRCVERSION, "memory_saver_source_ref"),
    ("v0.4.1", SRCVERSION, "memory_saver_source_ref"),
    (COMMIT, "", "memory_saver_srcversion"),
])
def test_a_spark_without_the_pin_is_refused_naming_the_variable(tmp_path, ref, srcversion, variable):
    rc, out = run_pin(tmp_path, True, ref, srcversion)
    assert rc != 0
    assert "Fix: set %s to" % variable in out, out
    assert not (tmp_path / "keys").exists()  # stopped before the signing key step


def test_off_a_spark_the_pin_checks_are_skipped(tmp_path):
    rc, out = run_pin(tmp_path, False, "", "")
    # The pins are the site's: each check runs once for the cluster, and is skipped when no node is a DGX Spark.
    for task in ("The release is pinned to a reviewed commit (DGX Spark only)",
                 "The module that commit builds is pinned by its srcversion (DGX Spark only)"):
        assert "TASK [%s] " % task in out, out
        assert out.split("TASK [%s] " % task)[1].split("TASK [")[0].count("skipping: [localhost]") == 1, out
    assert not (tmp_path / "keys").exists()  # check mode: the key step only said what it would do
    assert "Fix: set memory_saver_source_ref" not in out and "Fix: set memory_saver_srcversion" not in out
