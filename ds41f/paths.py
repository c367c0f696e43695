"""Where the project and its collection live, so the CLI can import the one topology model."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLLECTIONS = ROOT / "collections"
PLAYBOOKS = ROOT / "playbooks"
LAB_STATE = ROOT / ".lab"


def stamp():
    """The UTC time that names run and report folders (20261202T033000Z): they sort as they read."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def import_collection():
    """Make ``ansible_collections.dgxspark.ds41f`` importable from the working tree."""
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


def topology():
    import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology as model

    return model
