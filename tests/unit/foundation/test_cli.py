"""The ds41f command's own decisions (which stage, which inventory, which lab), without starting anything."""

import pytest
import yaml

from ds41f import cli, paths


def test_unknown_stage_lists_the_stages(capsys):
    assert cli.main(["run", "no-such-stage", "-i", "inventories/ring4"]) == 2
    err = capsys.readouterr().err
    assert "no stage 'no-such-stage'" in err and "site_config" in err and "validate" in err


def test_run_without_inventory_or_lab_says_how_to_get_one(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(paths, "LAB_STATE", tmp_path)
    args = cli.parser().parse_args(["run", "site"])
    with pytest.raises(SystemExit) as done:  # exit 2: bad usage
        cli.inventory_for(args)
    assert done.value.code == 2
    assert "no lab 'lab' is up. Fix: -i inventories/<site> or ds41f lab up" in capsys.readouterr().err


def test_a_lab_run_keeps_its_own_fact_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "LAB_STATE", tmp_path)
    (tmp_path / "ring" / "inventory").mkdir(parents=True)
    inventory, env = cli.inventory_for(cli.parser().parse_args(["run", "site", "--lab", "ring"]))
    assert inventory == [str(tmp_path / "ring" / "inventory")]
    assert env == {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "ring" / "facts")}


def test_lab_name_is_the_site_folder_unless_given(tmp_path):
    site = tmp_path / "ring" / "x.spark.yml"
    site.parent.mkdir()
    site.write_text("plugin: dgxspark.ds41f.spark_topology\n")
    assert cli.lab_name(str(site.parent)) == "ring"
    assert cli.lab_name(str(site), "other") == "other"


def test_lab_up_refuses_a_bad_site_before_starting_anything(tmp_path, capsys):
    site = tmp_path / "bad" / "bad.spark.yml"
    site.parent.mkdir()
    site.write_text(yaml.safe_dump({"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp4-ring",
                                    "nodes": [{"name": "a", "address": "10.9.9.1"}]}))
    assert cli.main(["lab", "up", str(site.parent)]) == 2
    assert "nodes: tp4-ring needs exactly 4 nodes; the site lists 1" in capsys.readouterr().err
