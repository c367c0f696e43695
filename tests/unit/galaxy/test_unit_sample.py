"""make test's per-version checks run a sample of the unit tests on all pairs but one (tests/conftest.py): the
sample is stable for a seed, about the fraction asked, different for another seed, and every test is in some."""

import random

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
