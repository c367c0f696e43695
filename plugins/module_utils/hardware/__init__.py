# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The thin layer through which everything reads hardware we cannot have in the lab.

Readers take a ``Host``: a filesystem root (``/`` on a node, a recorded tree under tests/fixtures in unit
tests) and a ``run`` callable (``module.run_command`` on a node, a table of recorded outputs in tests).
They parse and return plain data; they never write. Every reader that needs a DGX Spark says so through
``Unavailable`` with a reason, so a stage can report "skipped: not a DGX Spark" instead of pretending.
"""
