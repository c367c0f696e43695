# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: recipe
short_description: The collection's recipe (group_vars/all/*.yml) for inventories that are not site files
version_added: 0.1.0
description:
  - Loads every C(*.yml) under the collection's C(group_vars/all/) - release pins, serve arguments,
    environment, per stage - as variables of the group C(all).
  - Not needed with a site file - the P(dgxspark.ds41f.spark_topology#inventory) inventory plugin already sets
    the recipe on the group C(all), below every C(group_vars) file, whatever ansible.cfg enables. Enable this
    plugin only to see the recipe with another kind of inventory.
  - It then sits at the precedence of inventory C(group_vars/all). List it before C(host_group_vars)
    (C(vars_plugins_enabled = dgxspark.ds41f.recipe, host_group_vars)) so the inventory's own
    C(group_vars/all.yml) still overrides it.
"""

from ansible.inventory.group import Group
from ansible.plugins.vars import BaseVarsPlugin

from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import recipe_files


class VarsModule(BaseVarsPlugin):
    def get_vars(self, loader, path, entities, cache=True):
        super().get_vars(loader, path, entities)
        if not any(isinstance(e, Group) and e.name == "all" for e in entities):
            return {}
        return recipe_files.load(loader)
