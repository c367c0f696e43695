"""Where the controller can import vLLM, the validation puts every rank's rendered command through its parser.

The lab engine's upstream vLLM (`python -m ds41f.lab.engine build`) stands in for a controller with vLLM: its site
folder joins PYTHONPATH, as it would on a controller where vLLM is installed. One parser process checks them all.
"""

import copy

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, topology, validation, vllm_check
from ds41f.lab import engine
from tests.conftest import ROOT

from .conftest import good_site, host_values


@pytest.fixture
def vllm_on_path(monkeypatch):
    if not (engine.SITE / "vllm").is_dir():
        pytest.fail("the lab engine is not built. Fix: make engine (python -m ds41f.lab.engine build)")
    monkeypatch.setenv("PYTHONPATH", str(engine.SITE))
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cpu")
    monkeypatch.syspath_prepend(str(engine.SITE))


def lab_commands(serve_args):
    lab = yaml.safe_load((ROOT / "inventories" / "lab" / "group_vars" / "spark_cluster.yml").read_text())
    lab["serve_args"] = serve_args
    site = good_site()
    cluster = topology.build(site)
    shape = cluster.groupvars()["spark_shape"]
    values = host_values(copy.deepcopy(site), lab)
    return [launch.program_args(launch.render(
        launch.recipe_from_vars(values[n.name]), shape, launch.node_from_vars(values[n.name], n.rank),
        {"nodes": 4, "head_address": cluster.head.address})) for n in cluster.nodes]


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_every_rank_is_parsed_and_an_unknown_flag_is_named(vllm_on_path):
    assert vllm_check.available()
    good = lab_commands(["--dtype", "bfloat16", "--enforce-eager"])
    unknown = lab_commands(["--dtype", "bfloat16", "--no-such-flag"])[0]
    patched = lab_commands(["--dtype", "bfloat16", "--engram-config", '{"table_memory":"disk"}'])[1]
    verdicts = vllm_check.errors(good + [unknown, patched], ["--engram-config"])
    assert verdicts[:4] == [None] * 4, verdicts
    assert "--no-such-flag" in verdicts[4]
    assert verdicts[5] is None  # a flag the release declares patched-only is taken out first


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_the_validation_names_the_flag_vllm_refuses_once_for_every_rank(vllm_on_path):
    lab = yaml.safe_load((ROOT / "inventories" / "lab" / "group_vars" / "spark_cluster.yml").read_text())
    lab["serve_args"] = ["--dtype", "bfloat16", "--no-such-flag"]
    site = good_site()
    values = host_values(copy.deepcopy(site), lab)
    problems = validation.launch_problems(topology.build(site), values)
    assert len(problems) == 1 and problems[0].field == "serve_args", [str(p) for p in problems]
    assert "rank 0 (dgx1), 1 (dgx2), 2 (dgx3), 3 (dgx4)" in problems[0].message
    assert "--no-such-flag" in problems[0].message


def test_without_vllm_the_parser_is_not_offered_and_patched_flags_strip_with_their_values(monkeypatch):
    monkeypatch.setattr(vllm_check.importlib.util, "find_spec", lambda name: None)
    assert vllm_check.available() is False
    assert vllm_check.strip_flags(["serve", "/m", "--engram-config", "{}", "--x"], ["--engram-config"]) == [
        "serve", "/m", "--x"]
