# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Filter of the collective check: every rank's result merged into one verdict."""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils import collective
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain


def collective_verdict(registered):
    """``registered``: every rank's registered collective_check result (or its C(collective) dict)."""
    rows = []
    for item in plain(registered or []):
        if isinstance(item, dict):
            rows.append(item.get("collective", item) if "collective" in item else item)
    return collective.verdict(rows)


class FilterModule:
    def filters(self):
        return {"collective_verdict": collective_verdict}
