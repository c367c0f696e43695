# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The collection's recipe: every group_vars/all/*.yml shipped in the collection, merged in file-name order.

The spark_topology inventory plugin sets it on the group all (and the optional recipe vars plugin can), so an
installed collection loads it whatever the user's ansible.cfg enables."""

from __future__ import annotations

import os

from ansible.utils.vars import combine_vars

RECIPE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "group_vars", "all")
# Set beside the recipe: the validation play refuses to run without it.
MARKER = "ds41f_recipe_files"


def load(loader):
    names = sorted(n for n in os.listdir(RECIPE_DIR) if n.endswith((".yml", ".yaml")))
    data = {}
    for name in names:
        # The recipe is the collection's own file: its templates ({{ ds41f_release }}) are trusted.
        found = loader.load_from_file(os.path.join(RECIPE_DIR, name), cache="all", trusted_as_template=True)
        data = combine_vars(data, found or {})
    data[MARKER] = names
    return data
