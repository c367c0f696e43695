"""Make the collection importable as ansible_collections.dgxspark.ds41f from the working tree."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
for path in (str(ROOT / "collections"), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)
