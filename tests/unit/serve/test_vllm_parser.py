"""Every rendered `vllm serve` command line against the real vLLM argument parser.

The pinned serving build is a patched vLLM that no package carries; the closest parser on this machine is
upstream vLLM 0.32.0 (the lab engine, `python -m ds41f.lab.engine build`). Every rank's command of every
shape must pass it once the flags the recipe declares (serve_patched_flags, per release) are taken out; and
upstream must refuse each declared flag as the recipe renders it, for the reason the recipe gives: a flag called
patched-only is unknown upstream, a flag upstream knows is refused for its rendered value only.
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


# How stock vLLM refuses each declared flag as rendered: unknown to it (patched-only), or known with a rendered
# value only the patched build accepts (group_vars/all/serve.yml says which).
PATCHED_ONLY = ("--max-parallel-prefills", "--prefill-yield", "--prefill-yield-limit-s")
PATCHED_VALUE = ("--engram-config", "--linear-backend", "--moe-backend", "--jit-monitor-mode")


def rendered_use(argv, name):
    """``name`` with the value it has in ``argv`` (a switch alone)."""
    at = argv.index(name)
    value = argv[at + 1] if at + 1 < len(argv) and not argv[at + 1].startswith("--") else None
    return [name] + ([value] if value is not None else [])


@pytest.fixture(scope="module")
def verdicts():
    recipe = load_recipe()
    patched = recipe["serve_patched_flags"][recipe["ds41f_release"]]
    argvs, labels = [], []
    for shape in topology.SHAPES:
        for spec in specs(recipe, shape):
            argvs.append(vllm_check.strip_flags(launch.program_args(spec), patched))
            labels.append("%s rank %d" % (shape, spec["rank"]))
    head = launch.program_args(specs(recipe, "tp4-ring")[0])
    probes = [["serve", "/models"] + rendered_use(head, name) for name in patched]
    probes += [["serve", "/models", name] for name in PATCHED_ONLY]  # the flag alone: known or not
    probes.append(["serve", "/models", "--no-such-flag"])
    probes.append(["serve", "/models", "--max-num-seqs", "many"])
    errors = parse_all(argvs + probes)
    names = patched + ["%s alone" % n for n in PATCHED_ONLY] + ["unknown", "bad type"]
    return dict(zip(labels, errors[:len(argvs)], strict=True)), dict(zip(names, errors[len(argvs):], strict=True))


def test_every_rank_of_every_shape_parses_upstream(verdicts):
    ranks, _ = verdicts
    assert len(ranks) == sum(s.nodes for s in topology.SHAPES.values())
    failed = {label: error for label, error in ranks.items() if error}
    assert failed == {}


def test_declared_flags_are_refused_upstream_as_rendered_and_for_the_reason_given(verdicts):
    _, probes = verdicts
    declared = load_recipe()["serve_patched_flags"]["spark-ds41f-1030"]
    assert sorted(declared) == sorted(PATCHED_ONLY + PATCHED_VALUE)
    for name in declared:
        assert probes[name], "%s as rendered parses upstream: remove it from serve_patched_flags" % name
    for name in PATCHED_ONLY:  # unknown upstream, whatever its value
        assert "unrecognized arguments: %s" % name in probes[name] and "unrecognized" in probes["%s alone" % name]
    for name in PATCHED_VALUE:  # upstream knows the flag: its rendered value is what only the patched build takes
        assert "unrecognized arguments" not in probes[name], (name, probes[name])
    assert "unrecognized arguments: --no-such-flag" in probes["unknown"]
    assert "many" in probes["bad type"]


def test_flags_of_the_profile_that_stock_vllm_knows_are_rendered(verdicts):
    """Two flags of spark-ds41f's profiles that were left out as patched-only are stock vLLM's own, with defaults
    that differ from the profiles' values: the recipe renders them (tests/fixtures/release/)."""
    ranks, _ = verdicts
    head = launch.program_args(specs(load_recipe(), "tp4-ring")[0])
    assert "--no-scheduler-reserve-full-isl" in head and rendered_use(head, "--prefix-cache-retention-interval") == [
        "--prefix-cache-retention-interval", "8192"]
    assert ranks["tp4-ring rank 0"] is None  # and upstream's parser takes both
