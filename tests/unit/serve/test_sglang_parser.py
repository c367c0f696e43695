"""Every rendered SGLang command against SGLang's own argument parser (sglang 0.5.23, ``sglang.srt.server_args``).

``make sglang-parser`` installs sglang and the few modules its import needs beyond the lab engine's site
(triton, orjson, ipython, traitlets; torch CPU comes from the site), without dependencies; the parser runs in its own
process (engines/sglang_check.py).
"""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import sglang_check
from ds41f.lab import engine

from .conftest import ROOT, cluster
from .sglang_recipe import render_all, sglang_values

PARSER = ROOT / ".lab" / "shared" / "sglang-parser"
SHAPES = ("tp4-ring", "tp4-switched", "tp3-triangle")


@pytest.fixture(scope="module")
def verdicts():
    if not (PARSER / ".installed").exists() or not (engine.SITE / "torch").exists():
        pytest.fail("SGLang's parser is not installed. Fix: make sglang-parser (after make engine)")
    values = sglang_values()
    argvs, labels = [], []
    for shape in SHAPES:
        for spec in render_all(values, cluster(shape)):
            argvs.append(spec["command"])
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
