"""Every rendered `vllm serve` command line against the real vLLM argument parser.

The pinned serving build is a patched vLLM that no package carries; the closest parser on this machine is
upstream vLLM 0.32.0 (the lab engine, `python -m ds41f.lab.engine build`). Every rank's command of every
shape must pass it once the flags the recipe declares patched-only (serve_patched_flags, per release) are
taken out; and each declared flag must really be unknown upstream, so the list stays true.
"""

import json
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, topology, vllm_check
from ds41f.lab import engine

from .conftest import load_recipe
from .test_launch import specs

pytestmark = [pytest.mark.lab_engine, pytest.mark.engine_python]


def parse_all(argvs):
    """vLLM's verdict on each argument list, through the engine's lab-rank --check (one import of vLLM)."""
    rank = engine.BIN / "lab-rank"
    if not rank.exists():
        pytest.fail("the lab engine is not built. Fix: make engine (python -m ds41f.lab.engine build)")
    proc = subprocess.run([sys.executable, str(rank), "--check"], input=json.dumps(argvs), text=True,
                          capture_output=True, env=engine.engine_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(argvs)
    return [r["error"] for r in results]


@pytest.fixture(scope="module")
def verdicts():
    recipe = load_recipe()
    patched = recipe["serve_patched_flags"][recipe["ds41f_release"]]
    argvs, labels = [], []
    for shape in topology.SHAPES:
        for spec in specs(recipe, shape):
            argvs.append(vllm_check.strip_flags(launch.program_args(spec), patched))
            labels.append("%s rank %d" % (shape, spec["rank"]))
    probes = [["serve", "/models", name, "1"] for name in patched]
    probes.append(["serve", "/models", "--no-such-flag"])
    probes.append(["serve", "/models", "--max-num-seqs", "many"])
    errors = parse_all(argvs + probes)
    names = patched + ["unknown", "bad type"]
    return dict(zip(labels, errors[:len(argvs)], strict=True)), dict(zip(names, errors[len(argvs):], strict=True))


def test_every_rank_of_every_shape_parses_upstream(verdicts):
    ranks, _ = verdicts
    assert len(ranks) == sum(s.nodes for s in topology.SHAPES.values())
    failed = {label: error for label, error in ranks.items() if error}
    assert failed == {}


def test_declared_patched_flags_are_unknown_upstream(verdicts):
    _, probes = verdicts
    for name, error in probes.items():
        assert error, "%s parses upstream: it is not patched-only; remove it from serve_patched_flags" % name
    assert "unrecognized arguments: --no-such-flag" in probes["unknown"]
    assert "many" in probes["bad type"]
