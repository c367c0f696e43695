"""Every rank's SGLang arguments against SGLang's own argument parser (sglang 0.5.23, ``sglang.srt.server_args``):
what the image's boot builds from the rank's settings and EXTRA_SGLANG_ARGS (engines/sglang.py, server_argv).

``make sglang-parser`` installs sglang and the few modules its import needs beyond the lab engine's site
(triton, orjson, ipython, traitlets; torch CPU comes from the site), without dependencies; the parser runs in its own
process (engines/sglang_check.py).
"""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import validation
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import sglang, sglang_check
from ds41f.lab import engine

from .conftest import ROOT, cluster
from .sglang_recipe import render_all, sglang_values

pytestmark = [pytest.mark.lab_engine, pytest.mark.engine_python]

PARSER = ROOT / ".lab" / "shared" / "sglang-parser"
SHAPES = ("tp4-ring", "tp4-switched", "tp3-triangle")


def installed(parser):
    if not (parser / ".installed").exists() or not (engine.SITE / "torch").exists():
        pytest.fail("SGLang's parser is not installed. Fix: make sglang-parser (after make engine)")


@pytest.fixture(scope="module")
def verdicts():
    installed(PARSER)
    values = sglang_values()
    argvs, labels = [], []
    for shape in SHAPES:
        for spec in render_all(values, cluster(shape)):
            argvs.append(sglang_check.server_argv(spec["command"]))
            labels.append("%s rank %d" % (shape, spec["rank"]))
    probes = [["--model-path", "/models", "--no-such-flag"], ["--model-path", "/models", "--tp-size", "many"]]
    errors = sglang_check.errors(argvs + probes, [PARSER, engine.SITE])
    return dict(zip(labels, errors[:len(argvs)], strict=True)), errors[len(argvs):]


def test_every_rank_parses_with_sglang(verdicts):
    ranks, _ = verdicts
    assert len(ranks) == 4 + 4 + 3
    assert {label: error for label, error in ranks.items() if error} == {}


def test_the_parser_refuses_what_it_should(verdicts):
    _, (unknown, bad_type) = verdicts
    assert "unrecognized arguments: --no-such-flag" in unknown
    assert "many" in bad_type


CHILD = """
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
argv = ConfigArgumentMerger(parser).merge_config_with_args(json.loads(sys.argv[1]))
print(json.dumps(ServerArgs.from_cli_args(parser.parse_args(argv)).api_key))
"""


def test_the_head_gets_its_key_from_the_config_file_as_sglang_merges_it(tmp_path):
    """The file as api_key.yml writes it (to_nice_yaml of {api-key: ...}; the merger turns each key into --KEY),
    read by SGLang's own config merger."""
    installed(PARSER)
    key = "5c1e0b7d9a2f4e6c8b0d1f3a5c7e9b2d4f6a8c0e1b3d5f7a"
    config = tmp_path / "api-key.yaml"
    config.write_text(yaml.dump({"api-key": key}, indent=4, default_flow_style=False))
    head = render_all(sglang_values(), cluster("tp4-ring"))[0]
    argv = [str(config) if a == sglang.KEY_CONFIG else a for a in sglang_check.server_argv(head["command"])]
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argv)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=900,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(PARSER), str(engine.SITE)])))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == key
    assert key not in json.dumps(head)


def test_the_validation_puts_every_rank_through_sglangs_parser():
    """What `ds41f run serve` does on the controller before any host (validation.launch_problems)."""
    installed(PARSER)
    c = cluster("tp4-ring")
    values = dict(sglang_values(), serve_args=sglang_values()["serve_args"] + ["--no-such-flag"],
                  serve_sglang_parser_path=[str(PARSER), str(engine.SITE)])
    found = validation.launch_problems(c, {n.name: dict(values, **c.hostvars(n.name)) for n in c.nodes})
    assert [(p.field, p.message) for p in found] == [(
        "serve_args", "SGLang's argument parser refuses the arguments of rank 0 (dgx1), 1 (dgx2), 2 (dgx3), 3 (dgx4): "
        "sglang serve: error: unrecognized arguments: --no-such-flag")]
    assert validation.parser_note(values) == " and parsed by SGLang's argument parser"
    assert "no rank's command was parsed" in validation.parser_note(dict(values, serve_sglang_parser_path=[]))
