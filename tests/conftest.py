"""Make the collection importable as ansible_collections.dgxspark.ds41f from the working tree."""

import contextlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
for path in (str(ROOT / "collections"), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

# The lab engine's Python (its wheels are cp311), which the lab recipes name for SGLang's parser: make exports it;
# a plain pytest finds it the way the lab engine does.
if not os.environ.get("DS41F_ENGINE_PYTHON"):
    from ds41f.lab import engine

    with contextlib.suppress(SystemExit):
        os.environ["DS41F_ENGINE_PYTHON"] = engine.python()
