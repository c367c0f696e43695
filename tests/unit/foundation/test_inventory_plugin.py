"""The inventory plugin and the validation play, run through the real ansible-inventory / ansible-playbook."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def ansible(tool, *args, cwd=ROOT):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(ROOT / ".ansible" / "tmp"))
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, env=env, text=True, capture_output=True)


def write_site(tmp_path, data, extra_files=None):
    (tmp_path / "site.spark.yml").write_text(yaml.safe_dump(data))
    for rel, content in (extra_files or {}).items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(content))
    return tmp_path


def base_site(**extra):
    data = {"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp3-triangle", "management_network": "192.168.5.0/24",
            "nodes": [{"name": "n%d" % i, "address": "192.168.5.%d" % (10 + i)} for i in range(1, 4)]}
    data.update(extra)
    return data


@pytest.mark.parametrize("name, count", [("ring4", 4), ("triangle3", 3), ("switched", 8)])
def test_example_inventories_list_every_node_with_reciprocal_addresses(name, count):
    proc = ansible("ansible-inventory", "-i", ROOT / "inventories" / name, "--list")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    hosts = data["spark_cluster"]["hosts"]
    assert len(hosts) == count
    assert data["spark_head"]["hosts"] == ["dgx1"]
    assert sorted(data["spark_workers"]["hosts"]) == sorted(hosts[1:])
    hostvars = data["_meta"]["hostvars"]
    by_address = {}
    for host in hosts:
        links = hostvars[host]["spark_links"]
        assert len(links) == (2 if name == "switched" else 4)
        for link in links:
            by_address[link["address"]] = (host, link)
    for _, link in by_address.values():
        for peer in link["peers"]:
            their_host, their_link = by_address[peer["address"]]
            assert their_host == peer["name"] and their_link["cidr"] == link["cidr"]
            assert link["address"] in [p["address"] for p in their_link["peers"]]


def test_graph_shows_head_and_workers():
    proc = ansible("ansible-inventory", "-i", ROOT / "inventories" / "ring4", "--graph")
    assert proc.returncode == 0
    assert "@spark_head:\n  |  |--dgx1" in proc.stdout
    assert "@spark_workers:" in proc.stdout and "@spark_tp4_ring:" in proc.stdout


def test_bad_site_fails_the_parse_with_the_field(tmp_path):
    data = base_site()
    data["nodes"][2]["address"] = "192.168.5.11"
    proc = ansible("ansible-inventory", "-i", write_site(tmp_path, data), "--list")
    assert proc.returncode != 0
    assert "nodes[2].address: 192.168.5.11 is also the address of nodes[0]" in proc.stderr


def validate(inventory):
    return ansible("ansible-playbook", "-i", inventory, ROOT / "playbooks" / "validate.yml")


def test_a_site_without_its_management_network_is_refused_while_the_firewall_is_on(tmp_path):
    """Who may SSH to the nodes and reach the API comes from the site's management network: without it, the
    firewall would shut the controller out, so validation stops first, naming both variables and the fix."""
    data = base_site()
    del data["management_network"]
    proc = validate(write_site(tmp_path, data))
    assert proc.returncode != 0
    for field in ("firewall_ssh_sources:", "serve_clients:"):
        assert field in proc.stdout and "set management_network in the site file" in proc.stdout
    data["vars"] = {"firewall_state": "absent"}  # no firewall: nothing to shut anyone out
    assert validate(write_site(tmp_path, data)).returncode == 0


def test_validation_passes_on_a_good_site_without_touching_hosts(tmp_path):
    # The addresses do not exist: a passing run proves the play opened no connection.
    proc = validate(write_site(tmp_path, base_site()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "site tp3-triangle: 3 nodes" in proc.stdout


def test_validation_rejects_a_list_given_as_a_string(tmp_path):
    proc = validate(write_site(tmp_path, base_site(vars={"site_config_alignment_keys": "kernel"})))
    assert proc.returncode != 0
    assert "site_config_alignment_keys: is the string 'kernel'" in proc.stdout
    assert "declares type list" in proc.stdout


def test_validation_rejects_a_choice_outside_the_spec(tmp_path):
    proc = validate(write_site(tmp_path, base_site(vars={"site_config_alignment_keys": ["kernel", "colour"]})))
    assert proc.returncode != 0
    assert "site_config_alignment_keys[1]: 'colour' is not one of" in proc.stdout


def test_validation_rejects_a_context_the_4k_shape_cannot_hold(tmp_path):
    site = base_site(shape="tp3-triangle-4k", vars={"serve_max_model_len": 1048576})
    proc = validate(write_site(tmp_path, site))
    assert proc.returncode != 0
    assert "serve_max_model_len: 1048576 tokens exceeds what tp3-triangle-4k holds (262144)" in proc.stdout
    assert "tp3-triangle (64 KiB kernel" in proc.stdout


def test_validation_rejects_a_hand_edited_derived_variable(tmp_path):
    inv = write_site(tmp_path, base_site(), {"host_vars/n2.yml": {"spark_rank": 0}})
    proc = validate(inv)
    assert proc.returncode != 0
    assert "n2.spark_rank: differs from what the site file derives" in proc.stdout


def show(inventory, expression):
    """The value of a Jinja expression on the first node, via a debug-only play (no connection)."""
    play = inventory / "show.yml"
    play.write_text(yaml.safe_dump([{"hosts": "spark_cluster[0]", "gather_facts": False, "tasks": [
        {"ansible.builtin.debug": {"msg": "VALUE=[{{ %s }}]" % expression}}]}]))
    proc = ansible("ansible-playbook", "-i", inventory / "site.spark.yml", play)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("VALUE=[", 1)[1].split("]", 1)[0]


def test_the_recipe_reaches_every_play_with_its_templates_rendered(tmp_path):
    release = yaml.safe_load((ROOT / "group_vars" / "all" / "release.yml").read_text())["ds41f_release"]
    assert show(write_site(tmp_path, base_site()), "ds41f_recipe.release") == release


def test_site_vars_override_the_recipe(tmp_path):
    inv = write_site(tmp_path, base_site(vars={"ds41f_release": "site-release-1"}))
    assert show(inv, "ds41f_recipe.release") == "site-release-1"


def test_inventory_group_vars_override_the_recipe(tmp_path):
    inv = write_site(tmp_path, base_site(), {"group_vars/spark_cluster.yml": {"ds41f_release": "group-release-2"}})
    assert show(inv, "ds41f_release") == "group-release-2"
