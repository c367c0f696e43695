"""make test's per-version checks run a sample of the unit tests on all pairs but one (tests/conftest.py): the
sample is stable for a seed, about the fraction asked, different for another seed, and every test is in some."""

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

from tests import conftest

IDS = ["tests/unit/area%d/test_x.py::test_%d[case%d]" % (i % 17, i, i % 5) for i in range(3000)]


def test_a_seed_chooses_the_same_sample_every_time_and_about_the_fraction_asked():
    first = [i for i in IDS if conftest.sampled(i, "4242", 0.34)]
    assert first == [i for i in IDS if conftest.sampled(i, "4242", 0.34)]
    assert 0.30 < len(first) / len(IDS) < 0.38
    assert all(conftest.sampled(i, "1", 1.0) for i in IDS)


def test_other_seeds_choose_other_tests_and_together_cover_them_all():
    seeds = [str(random.Random(7).randrange(32768) + n) for n in range(40)]
    samples = [{i for i in IDS if conftest.sampled(i, seed, 0.34)} for seed in seeds]
    assert len({frozenset(s) for s in samples}) == len(seeds)
    assert set().union(*samples) == set(IDS)


STUB = ("#!/usr/bin/env bash\necho \"$0 DS41F_UNIT_SAMPLE=${DS41F_UNIT_SAMPLE-unset}\"\n"
        "[ -n \"${NO_SUMMARY:-}\" ] || echo \"1 passed\"\n")
VENV_STUB = ("#!/usr/bin/env bash\nmkdir -p \"$1/bin\"\nprintf '%s' '" + STUB + "' > \"$1/bin/pytest\"\n"
             "chmod +x \"$1/bin/pytest\"\n")


def test_the_per_version_checks_sample_another_third_on_each_pair_but_the_last(tmp_path):
    """tests/galaxy/matrix.sh with stand-ins for the venvs, pytest, sanity and the user project: with
    MATRIX_UNIT_SAMPLE each pair but the last runs the unit tests with DS41F_UNIT_SAMPLE at the seed plus its index;
    the last, and every pair without it, runs them all."""
    root = Path(conftest.ROOT)
    (tmp_path / "tests" / "galaxy").mkdir(parents=True)
    shutil.copy(root / "tests" / "galaxy" / "matrix.sh", tmp_path / "tests" / "galaxy" / "matrix.sh")
    for name, text in (("matrix_venv.sh", VENV_STUB), ("sanity.sh", STUB), ("user_project.sh", STUB)):
        (tmp_path / "tests" / "galaxy" / name).write_text(text)
        (tmp_path / "tests" / "galaxy" / name).chmod(0o755)
    for name in ("requirements-dev.txt", "requirements-torch.txt", "setup.py"):
        (tmp_path / name).write_text("")
    pairs = ["3.11:2.19.14:12.3.0", "3.12:2.20.10:13.8.0", "3.13:2.21.5:14.5.0"]

    # make test runs this test under the very sample it checks: the outer run's settings must not reach the inner
    outer = {k: v for k, v in os.environ.items() if k not in ("MATRIX_UNIT_SAMPLE", "MATRIX_UNIT_SEED",
                                                               "DS41F_UNIT_SAMPLE")}

    def samples(**env):
        out = subprocess.run(["bash", "tests/galaxy/matrix.sh", *pairs], cwd=tmp_path, capture_output=True, text=True,
                             timeout=60, env=dict(outer, **env))
        assert out.returncode == 0, out.stdout + out.stderr
        logs = tmp_path / ".cache" / "matrix" / "logs"
        return [re.search(r"pytest DS41F_UNIT_SAMPLE=(\S*)", (logs / ("py%s-core%s.log" % (
            p.split(":")[0], p.split(":")[1].rsplit(".", 1)[0]))).read_text()).group(1) for p in pairs]

    assert samples(MATRIX_UNIT_SAMPLE="0.34", MATRIX_UNIT_SEED="100") == ["100:0.34", "101:0.34", ""]
    assert samples() == ["", "", ""]
    assert samples(NO_SUMMARY="1") == ["", "", ""]  # a log without pytest's summary line ends nothing early
