"""Make the collection importable as ansible_collections.dgxspark.ds41f from the working tree."""

import contextlib
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
