"""The recipe reaches a user's project with only a minimal ansible.cfg, below everything the user sets.

Each test is a user project in tmp_path: its own ansible.cfg (just where the collection is), its own inventory
folder with a site file, and the collection's own playbooks by FQCN."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
RECIPE_RELEASE = yaml.safe_load((ROOT / "group_vars" / "all" / "release.yml").read_text())["ds41f_release"]
SITE = {"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp3-triangle", "management_network": "192.168.5.0/24",
        "nodes": [{"name": "n%d" % i, "address": "192.168.5.%d" % (10 + i)} for i in range(1, 4)]}


def project(tmp_path, site=None, files=None):
    """A user project: minimal ansible.cfg, inventory/site.spark.yml and any inventory files given."""
    (tmp_path / "ansible.cfg").write_text("[defaults]\ncollections_path = %s\n" % (ROOT / "collections"))
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "site.spark.yml").write_text(site if isinstance(site, str) else yaml.safe_dump(site or SITE))
    for rel, content in (files or {}).items():
        (inventory / rel).parent.mkdir(parents=True, exist_ok=True)
        (inventory / rel).write_text(yaml.safe_dump(content))
    return tmp_path


def run(tool, *args, cwd, config=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config or cwd / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(cwd / ".tmp"), ANSIBLE_HOME=str(cwd / ".home"))
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, env=env, text=True, capture_output=True)


def show(proj, expression, *extra):
    play = proj / "show.yml"
    play.write_text(yaml.safe_dump([{"hosts": "spark_cluster[0]", "gather_facts": False, "tasks": [
        {"ansible.builtin.debug": {"msg": "VALUE=[{{ %s }}]" % expression}}]}]))
    proc = run("ansible-playbook", "-i", "inventory", play, *extra, cwd=proj)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("VALUE=[", 1)[1].split("]", 1)[0]


def checked(proc):
    found = re.search(r"(\d+) recipe variables checked against (\d+) roles", proc.stdout)
    assert found, proc.stdout + proc.stderr
    return int(found.group(1)), int(found.group(2))


def test_validate_checks_as_many_recipe_variables_as_in_the_checkout(tmp_path):
    user = run("ansible-playbook", "-i", "inventory", "dgxspark.ds41f.validate", cwd=project(tmp_path))
    assert user.returncode == 0, user.stdout + user.stderr
    site = tmp_path / "inventory" / "site.spark.yml"
    checkout = run("ansible-playbook", "-i", site, ROOT / "playbooks" / "validate.yml", cwd=tmp_path,
                   config=ROOT / "ansible.cfg")
    assert checkout.returncode == 0, checkout.stdout + checkout.stderr
    assert checked(user) == checked(checkout)
    assert checked(user)[0] > 50  # the recipe's pins, not only the few variables the site file derives


# Each layer sets ds41f_release; the highest one present wins, and the recipe's own templates follow it.
LAYERS = [
    ("recipe", {}, {}, [], RECIPE_RELEASE),
    ("group_vars/all.yml", {}, {"group_vars/all.yml": {"ds41f_release": "all-1"}}, [], "all-1"),
    ("group_vars/spark_cluster.yml", {}, {"group_vars/all.yml": {"ds41f_release": "all-1"},
                                          "group_vars/spark_cluster.yml": {"ds41f_release": "group-2"}}, [], "group-2"),
    ("site vars:", {"vars": {"ds41f_release": "site-3"}}, {"group_vars/spark_cluster.yml": {"ds41f_release": "group-2"},
                                                          "host_vars/n1.yml": {"other": 1}}, [], "site-3"),
    ("extra vars", {"vars": {"ds41f_release": "site-3"}}, {}, ["-e", "ds41f_release=extra-4"], "extra-4"),
]


@pytest.mark.parametrize("layer, site_extra, files, extra, expected", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_the_user_overrides_the_recipe_at_every_inventory_level(tmp_path, layer, site_extra, files, extra, expected):
    proj = project(tmp_path, dict(SITE, **site_extra), files)
    assert show(proj, "ds41f_release", *extra) == expected
    assert show(proj, "ds41f_recipe.release", *extra) == expected


def test_a_quoted_boolean_in_the_users_group_vars_all_is_refused(tmp_path):
    proj = project(tmp_path, files={"group_vars/all.yml": {"kernel_reboot_ok": "false"}})
    proc = run("ansible-playbook", "-i", "inventory", "dgxspark.ds41f.validate", cwd=proj)
    assert proc.returncode != 0
    assert "kernel_reboot_ok: is the string 'false'" in proc.stdout


def test_a_site_file_that_does_not_parse_stops_the_run(tmp_path):
    broken = yaml.safe_dump(SITE).replace("192.168.5.13", "192.168.5.11")  # two nodes, one address
    proc = run("ansible-playbook", "-i", "inventory", "dgxspark.ds41f.validate", cwd=project(tmp_path, broken))
    assert proc.returncode != 0
    assert "no host is in spark_cluster, so the site file did not parse" in proc.stdout
    assert "is also the address of nodes[0]" in proc.stderr  # the inventory warning names the field


def test_without_the_recipe_validation_fails_and_says_so(tmp_path):
    # A hand-written YAML inventory with the cluster group: no site file, so nothing loaded the recipe.
    proj = project(tmp_path)
    (proj / "inventory" / "site.spark.yml").unlink()
    (proj / "inventory" / "hosts.yml").write_text(yaml.safe_dump({"spark_cluster": {"hosts": {"n1": None}}}))
    proc = run("ansible-playbook", "-i", "inventory", "dgxspark.ds41f.validate", cwd=proj)
    assert proc.returncode != 0
    assert "the recipe (group_vars/all/ of dgxspark.ds41f) is not loaded" in proc.stdout
