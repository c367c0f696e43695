"""tests/checks.sh, make test's three streams: which scenarios wait for the lab engine, the order it keeps, and that
any stream failing fails make test. The streams' make is a stand-in that records its calls (the real targets run
in CI)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# What a scenario's nodes use when they run the lab engine: its image, or its folder bind-mounted from .lab/shared.
ENGINE_MARKS = ("ds41f-lab-engine", "/opt/ds41f-lab/engine")


def make_variable(name):
    match = re.search(r"^%s := (.*)$" % name, (ROOT / "Makefile").read_text(), re.M)
    assert match, name
    return match.group(1).split()


def uses_the_lab_engine(scenario, seen=None):
    """True when a file of the scenario, or a playbook of another scenario it names (../x/y.yml), mentions it."""
    seen = set() if seen is None else seen
    for path in sorted((ROOT / "molecule" / scenario).rglob("*")):
        if not path.is_file() or path in seen:
            continue
        seen.add(path)
        text = path.read_text(errors="replace")
        if any(mark in text for mark in ENGINE_MARKS):
            return True
        for other, name in re.findall(r"\.\./([\w-]+)/([\w.-]+\.yml)", text):
            target = ROOT / "molecule" / other / name
            if target.is_file() and target not in seen:
                seen.add(target)
                if any(mark in target.read_text() for mark in ENGINE_MARKS):
                    return True
    return False


def test_the_scenarios_that_wait_for_the_engine_are_those_whose_nodes_use_it():
    scenarios = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
    assert sorted(make_variable("LAB_ENGINE_SCENARIOS")) == [s for s in scenarios if uses_the_lab_engine(s)]


FAKE_MAKE = """#!/usr/bin/env bash
shift  # --no-print-directory
echo "$*" >> "$CALLS"
case " $* " in *" $FAIL "*) exit 3 ;; esac
"""


@pytest.fixture
def run(tmp_path):
    (tmp_path / "tests").mkdir()
    for name in ("checks.sh", "beside.sh"):
        (tmp_path / "tests" / name).symlink_to(ROOT / "tests" / name)
    fake = tmp_path / "make"
    fake.write_text(FAKE_MAKE)
    fake.chmod(0o755)
    calls = tmp_path / "calls"

    def go(fail="none", **extra):
        calls.write_text("")
        env = {"PATH": "/usr/bin:/bin", "MAKE": str(fake), "CALLS": str(calls), "FAIL": fail,
               "BESIDE": "lint matrix", "SCENARIOS": "alpha ring beta serve-lab",
               "LAB_ENGINE_SCENARIOS": "ring serve-lab", **extra}
        out = subprocess.run(["bash", "tests/checks.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=60)
        return out, calls.read_text().splitlines()
    return go


def test_the_scenarios_with_the_engine_run_after_its_build_and_the_others_before(run):
    out, calls = run()
    assert out.returncode == 0, out.stdout + out.stderr
    assert "every stream passed" in out.stdout
    assert set(calls) == {"molecule SCENARIOS=alpha beta", "molecule SCENARIOS=ring serve-lab",
                          "engine sglang-parser proxy-nginx", "unit-engines", "-k lint matrix"}
    assert calls.index("engine sglang-parser proxy-nginx") < calls.index("molecule SCENARIOS=ring serve-lab")
    assert calls.index("molecule SCENARIOS=alpha beta") < calls.index("molecule SCENARIOS=ring serve-lab")
    assert calls.index("engine sglang-parser proxy-nginx") < calls.index("unit-engines")


def test_an_engine_that_does_not_build_runs_none_of_its_scenarios_and_fails(run):
    out, calls = run(fail="sglang-parser")
    assert out.returncode == 1
    assert "molecule SCENARIOS=ring serve-lab" not in calls and "unit-engines" not in calls
    assert "molecule SCENARIOS=alpha beta" in calls and "-k lint matrix" in calls
    assert "the lab engine did not build" in out.stdout and "FAILED: molecule engines" in out.stdout


@pytest.mark.parametrize("fail, streams", [("beta", "molecule"), ("matrix", "beside"), ("unit-engines", "engines")])
def test_any_stream_failing_fails_the_checks_and_the_others_run_to_their_end(run, fail, streams):
    out, calls = run(fail=fail)
    assert out.returncode == 1
    assert out.stdout.rstrip().endswith("FAILED: %s" % streams), out.stdout
    assert "-k lint matrix" in calls and "unit-engines" in calls
    # A failed scenario stops the molecule stream: the engine's scenarios do not start.
    assert ("molecule SCENARIOS=ring serve-lab" in calls) == (streams != "molecule")


def _scenarios_run(calls):
    return sorted(s for c in calls if c.startswith("molecule SCENARIOS=") for s in c.split("=", 1)[1].split())


def test_a_sample_runs_the_scenarios_always_run_and_that_many_others_the_seed_picks_again(run):
    sample = {"SCENARIOS": "alpha beta gamma ring serve-lab verify", "LAB_ENGINE_SCENARIOS": "ring serve-lab verify",
              "SCENARIOS_ALWAYS": "serve-lab verify", "SCENARIO_SAMPLE": "2"}
    picks = []
    for seed in range(1, 30):
        out, calls = run(SCENARIO_SEED=str(seed), **sample)
        assert out.returncode == 0, out.stdout + out.stderr
        ran = _scenarios_run(calls)
        assert {"serve-lab", "verify"} <= set(ran) and len(ran) == 4
        assert "SCENARIO_SEED=%d" % seed in out.stdout
        assert _scenarios_run(run(SCENARIO_SEED=str(seed), **sample)[1]) == ran  # the seed picks them again
        engine_call = [c for c in calls if c.startswith("molecule") and "serve-lab" in c][0]
        assert set(engine_call.split("=", 1)[1].split()) <= {"ring", "serve-lab", "verify"}  # still after the build
        assert calls.index("engine sglang-parser proxy-nginx") < calls.index(engine_call)
        picks.append(set(ran) - {"serve-lab", "verify"})
    assert set().union(*picks) == {"alpha", "beta", "gamma", "ring"}  # every other scenario gets its turn
    out, calls = run(**{k: v for k, v in sample.items() if k != "SCENARIO_SAMPLE"})
    assert _scenarios_run(calls) == sorted(sample["SCENARIOS"].split())  # no sample: every scenario
