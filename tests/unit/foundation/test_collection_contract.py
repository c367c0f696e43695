"""Contracts every plugin and role of the collection keeps: docs render, attributes are declared, defaults are
specified, stage playbooks validate first and fail as a cluster."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if not p.stem.startswith("_"))
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())
# Playbooks that are not stages: they validate, or they only read.
NOT_STAGES = {"validate.yml", "site.yml"}


def ansible_doc(kind, names):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(ROOT / ".ansible" / "tmp"))
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, "--json", *names], cwd=ROOT, env=env,
                          text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_module_documents_check_mode_diff_and_idempotence():
    docs = ansible_doc("module", ["dgxspark.ds41f." + m for m in MODULES])
    assert sorted(docs) == sorted("dgxspark.ds41f." + m for m in MODULES)
    for name, doc in docs.items():
        attributes = doc["doc"].get("attributes") or {}
        for attr in ("check_mode", "diff_mode", "idempotent"):
            assert attr in attributes, "%s lacks attributes.%s" % (name, attr)
            assert attributes[attr]["support"] in ("full", "partial", "none")
            if attributes[attr]["support"] == "partial":
                assert attributes[attr].get("description") or attributes[attr].get("details"), name
        assert doc["examples"].strip(), name


def test_inventory_and_vars_plugins_render():
    assert "dgxspark.ds41f.spark_topology" in ansible_doc("inventory", ["dgxspark.ds41f.spark_topology"])
    assert "dgxspark.ds41f.recipe" in ansible_doc("vars", ["dgxspark.ds41f.recipe"])
    assert "dgxspark.ds41f.drift_report" in ansible_doc("callback", ["dgxspark.ds41f.drift_report"])


@pytest.mark.parametrize("role", ROLES)
def test_role_declares_every_default_in_its_argument_spec(role):
    spec_path = ROOT / "roles" / role / "meta" / "argument_specs.yml"
    assert spec_path.is_file(), "roles/%s has no meta/argument_specs.yml" % role
    options = yaml.safe_load(spec_path.read_text())["argument_specs"]["main"]["options"]
    defaults_path = ROOT / "roles" / role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_path.read_text()) if defaults_path.exists() else {}
    for name, value in (defaults or {}).items():
        assert name in options, "roles/%s: default %s is not in argument_specs" % (role, name)
        assert name.startswith(role + "_") or name.startswith("_"), "roles/%s: %s lacks the role prefix" % (role, name)
        if "default" in options[name]:
            assert options[name]["default"] == value, "roles/%s: %s default differs from the spec" % (role, name)


def stage_playbooks():
    return sorted(p for p in (ROOT / "playbooks").glob("*.yml") if p.name not in NOT_STAGES)


@pytest.mark.parametrize("playbook", [p for p in stage_playbooks() if p.name != "doctor.yml"], ids=lambda p: p.name)
def test_stage_playbooks_validate_first_and_fail_as_a_cluster(playbook):
    """A stage forms the cluster: its first failure stops every node (any_errors_fatal, never switched off by an
    ignore_errors; the doctor's own audit plays, doctor.yml, are where errors are ignored)."""
    plays = yaml.safe_load(playbook.read_text())
    assert plays[0].get("ansible.builtin.import_playbook") == "validate.yml", playbook.name
    for play in plays[1:]:
        if "hosts" in play and "spark_cluster" in str(play["hosts"]):
            assert play.get("any_errors_fatal") is True, "%s: %s" % (playbook.name, play.get("name"))
            assert "ignore_errors" not in play, "%s: %s" % (playbook.name, play.get("name"))


def test_the_doctor_audits_every_stage_of_site_in_its_order_and_reads_on_past_errors():
    """doctor.yml is a play per stage: the stage's own role in check mode, tagged by the stage's name as site.yml
    tags its import, errors ignored so that every stage reads every node to the end; nothing else is threaded into
    the stages (no flag of the doctor's in their playbooks)."""
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    stages = [(p["tags"], yaml.safe_load((ROOT / "playbooks" / p["ansible.builtin.import_playbook"]).read_text()))
              for p in site]
    wanted = []
    for tags, plays in stages:
        first = next(p for p in plays if "hosts" in p)  # after validate.yml and reach.yml: the stage's own play
        wanted.append((tags[0], first["tasks"][-1]["ansible.builtin.import_role"]["name"]))
    audits = [p for p in yaml.safe_load((ROOT / "playbooks" / "doctor.yml").read_text())
              if str(p.get("name", "")).startswith("Audit - ")]
    assert [(a["tags"][0], a["tasks"][0]["ansible.builtin.import_role"]["name"]) for a in audits] == wanted
    assert all(a["ignore_errors"] is True and "any_errors_fatal" not in a for a in audits)
    for playbook in stage_playbooks():
        assert "ds41f_doctor" not in playbook.read_text(), playbook.name


def test_site_imports_every_stage_that_forms_the_cluster_in_order():
    site = [p["ansible.builtin.import_playbook"] for p in yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())]
    order = ["host_baseline.yml", "kernel.yml", "memory_saver.yml", "fabric.yml", "firewall.yml", "site_config.yml",
             "model.yml",
             "image.yml", "serve.yml", "verify.yml"]
    present = [p for p in order if (ROOT / "playbooks" / p).exists()]
    assert [p for p in site if p in order] == present


def run_once_includes():
    """(role file, included file) for every include_tasks run once: the include itself is one task, so each task of
    the included file must run once too, or the other nodes would silently not run it."""
    for tasks_file in sorted((ROOT / "roles").glob("*/tasks/*.yml")):
        for task in yaml.safe_load(tasks_file.read_text()) or []:
            target = task.get("ansible.builtin.include_tasks")
            if target and task.get("run_once") is True:
                pattern = target.split("{{")[0] + "*" + target.split("}}")[-1] if "{{" in target else target
                found = sorted(tasks_file.parent.glob(pattern))
                assert found, "%s: %s matches no file" % (tasks_file, target)
                yield from ((tasks_file, path) for path in found)


def test_files_included_once_run_every_task_once():
    pairs = list(run_once_includes())
    assert {p.name for _, p in pairs} >= {"build.yml", "source_hf.yml", "source_node.yml", "source_controller.yml"}
    for tasks_file, path in pairs:
        for task in yaml.safe_load(path.read_text()):
            assert task.get("run_once") is True, "%s includes %s once, but its task %r does not run once" % (
                tasks_file.relative_to(ROOT), path.name, task.get("name"))


def test_every_module_is_in_the_sanity_ignore_for_its_license_header():
    # Modules carry the collection's Apache-2.0 header; validate-modules wants GPLv3 unless the ignore file says why.
    ignored = {line.split()[0] for line in (ROOT / "tests" / "sanity" / "ignore-2.19.txt").read_text().splitlines()
               if "validate-modules:missing-gplv3-license" in line}
    for version in ("2.20", "2.21"):
        assert (ROOT / "tests" / "sanity" / ("ignore-%s.txt" % version)).resolve().name == "ignore-2.19.txt"
    missing = [path for path in ("plugins/modules/%s.py" % m for m in MODULES) if path not in ignored]
    assert not missing, "add a missing-gplv3-license line to tests/sanity/ignore-2.19.txt for %s" % missing
