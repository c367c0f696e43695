# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: serve_recipe
short_description: The recipe variables a launch spec reads, as they resolve for this host and task
version_added: 0.1.0
description:
  - Returns a dict of every variable C(plugins/module_utils/launch.py) reads (C(ds41f_release) and the
    C(serve_*) recipe values) that is defined where the lookup runs, templated.
  - Unlike C(hostvars[inventory_hostname]), it sees play, role, include and extra variables, so a play that
    sets C(serve_image) renders the spec it means.
  - Feed it to the C(dgxspark.ds41f.launch_spec) filter.
"""

EXAMPLES = r"""
- name: This rank's launch spec
  ansible.builtin.set_fact:
    serve_spec: "{{ lookup('dgxspark.ds41f.serve_recipe') | dgxspark.ds41f.launch_spec(spark_shape, spark_rank,
      spark_nodes | length, spark_head_address) }}"
"""

RETURN = r"""
_raw:
  description: The variables, by name.
  type: dict
"""

from ansible.plugins.lookup import LookupBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils.launch import VAR_NAMES


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        found = {name: variables[name] for name in VAR_NAMES if name in variables}
        return [self._templar.template(found)]
