"""Make the collection importable as ansible_collections.dgxspark.ds41f from the working tree."""

import contextlib
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# Every file of tasks or plays the collection runs.
TASK_FILES = sorted(list((ROOT / "roles").glob("*/tasks/*.yml")) + list((ROOT / "playbooks").rglob("*.yml")))
for path in (str(ROOT / "collections"), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

# The lab engine's Python (its wheels are cp311), which the lab recipes name for SGLang's parser: make exports it;
# a plain pytest finds it the way the lab engine does.
if not os.environ.get("DS41F_ENGINE_PYTHON"):
    from ds41f.lab import engine

    with contextlib.suppress(SystemExit):
        os.environ["DS41F_ENGINE_PYTHON"] = engine.python()


def tasks(items):
    """Every task of a task file or playbook (parsed YAML), blocks and plays' task lists opened."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if "hosts" not in item and not any("import_playbook" in k for k in item):  # a play is no task
            yield item
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from tasks(item.get(key))


# DS41F_UNIT_SAMPLE="SEED:FRACTION" runs that fraction of the collected tests, chosen by SEED (make test's
# per-version checks on all but one pair: every test runs on one pair, a different third on each of the others
# each time; `make matrix` alone runs every test on every pair). The choice is stable for a seed, so a failure is
# replayed with the same value.
SAMPLE_ENV = "DS41F_UNIT_SAMPLE"


def sampled(nodeid, seed, fraction):
    """Whether ``nodeid`` is in the sample of ``fraction`` that ``seed`` chooses."""
    digest = hashlib.sha256(("%s %s" % (seed, nodeid)).encode()).digest()
    return int.from_bytes(digest[:4], "big") < fraction * 2 ** 32


def pytest_collection_modifyitems(config, items):
    value = os.environ.get(SAMPLE_ENV)
    if not value:
        return
    seed, _, fraction = value.partition(":")
    fraction = float(fraction)
    if not 0 < fraction <= 1:
        raise ValueError("%s=%s: the fraction after ':' must lie in (0, 1]" % (SAMPLE_ENV, value))
    keep, left = [], []
    for item in items:
        (keep if sampled(item.nodeid, seed, fraction) else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
    items[:] = keep


def pytest_report_header(config):
    if os.environ.get(SAMPLE_ENV):
        return "%s=%s: a sample of the tests (seed:fraction), chosen by the seed" % (SAMPLE_ENV, os.environ[SAMPLE_ENV])
    return None
