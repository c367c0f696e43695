# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: recipe
short_description: The collection's recipe (group_vars/all/*.yml) as variables of the group all
version_added: 0.1.0
description:
  - Loads every C(*.yml) under the collection's C(group_vars/all/) - release pins, serve arguments,
    environment, per stage - as variables of the group C(all), whichever playbook, molecule scenario or
    ad-hoc command runs.
  - It sits at the precedence of inventory C(group_vars/all), so a site overrides the recipe with its own
    inventory C(group_vars/spark_cluster.yml) (or any group but C(all)), or with the site file's C(vars:),
    which the inventory plugin sets on every node.
  - Enable it in ansible.cfg with C(vars_plugins_enabled = host_group_vars, dgxspark.ds41f.recipe).
"""

import os

from ansible.inventory.group import Group
from ansible.plugins.vars import BaseVarsPlugin
from ansible.utils.vars import combine_vars

RECIPE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "group_vars", "all")


class VarsModule(BaseVarsPlugin):
    def get_vars(self, loader, path, entities, cache=True):
        super().get_vars(loader, path, entities)
        if not any(isinstance(e, Group) and e.name == "all" for e in entities):
            return {}
        data = {}
        for name in sorted(os.listdir(RECIPE_DIR)):
            if name.endswith((".yml", ".yaml")):
                # The recipe is the collection's own file: its templates ({{ ds41f_release }}) are trusted.
                found = loader.load_from_file(os.path.join(RECIPE_DIR, name), cache="all", trusted_as_template=True)
                data = combine_vars(data, found or {})
        return data
