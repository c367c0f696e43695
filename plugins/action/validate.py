# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Controller-only validation of the site and recipe: runs before any host is touched."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import known_vars, recipe, validation
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain
from ansible_collections.dgxspark.ds41f.plugins.modules import validate as module_doc

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLES_DIR = os.path.join(ROOT, "roles")
RECIPE_DIR = os.path.join(ROOT, "group_vars", "all")


def recipe_files():
    """{name: (group_vars/all/<file>, raw value)}: where each recipe variable of the collection is written."""
    found = {}
    for name in sorted(os.listdir(RECIPE_DIR)):
        if name.endswith((".yml", ".yaml")):
            with open(os.path.join(RECIPE_DIR, name)) as handle:
                for key, value in (yaml.safe_load(handle) or {}).items():
                    found[key] = ("group_vars/all/%s" % name, value)
    return found


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def vault_file(self, path):
        """A vault-encrypted file's bytes, opened with the run's vault secrets as the file lookup opens it."""
        real = self._loader.get_real_file(path, decrypt=True)
        try:
            with open(real, "rb") as handle:
                return handle.read()
        finally:
            self._loader.cleanup_tmp_file(real)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        hosts = list(self._task.args.get("hosts") or task_vars["ansible_play_hosts_all"])
        hostvars = task_vars["hostvars"]
        if not hostvars[hosts[0]].get("ds41f_recipe_files"):
            result.update(failed=True, msg="the recipe (group_vars/all/ of dgxspark.ds41f) is not loaded, so it would "
                          "go unchecked. Fix: use a site file through the dgxspark.ds41f.spark_topology inventory "
                          "plugin, which loads it.")
            return result
        specs = recipe.load_role_specs(ROLES_DIR, yaml.safe_load)
        names = validation.variable_names(specs) + list(validation.DERIVED)
        read = set(names)
        host_values, unchecked = {}, set()
        for host in hosts:
            hv, values = hostvars[host], {}
            for name in names:
                try:
                    if name in hv:
                        values[name] = plain(hv[name])
                except AnsibleError:
                    unchecked.add(name)  # refers to a variable only a role defines: it has no value here
                    continue
            for key in validation.DERIVED:
                values.setdefault(key, None)
            # Names no role reads are not templated: the unknown-variable rule needs only that they are set.
            values.update((name, None) for name in hv if name not in read and known_vars.looks_like_ours(name))
            host_values[host] = values
        manager = self._task.get_variable_manager()
        extra = plain(getattr(manager, "extra_vars", None) or {})
        site = plain(hostvars[hosts[0]].get("spark_site"))
        if isinstance(site, dict) and hostvars[hosts[0]].get("spark_site_vars"):
            # Which names the site's vars: sets (their values are in hostvars, templated), for the messages' origins.
            site = dict(site, vars={name: None for name in plain(hostvars[hosts[0]]["spark_site_vars"])})
        cluster, problems = validation.check(site, hosts, host_values, specs,
                                             recipe_files(), extra, self.vault_file)
        if problems:
            result.update(failed=True, problems=[str(p) for p in problems],
                          msg="invalid site or recipe (%d problem%s):\n%s" % (
                              len(problems), "" if len(problems) == 1 else "s",
                              "\n".join("  - %s" % p for p in problems)))
            return result
        result.update(changed=False, shape=cluster.shape.name, nodes=[n.name for n in cluster.nodes],
                      msg="site %s: %d nodes, %d fabric paths; %d recipe variables checked against %d roles; "
                          "launch spec of every rank rendered%s; %s" % (
                              cluster.shape.name, len(cluster.nodes), len(cluster.cable_table()),
                              len(host_values[hosts[0]]), len(specs), validation.parser_note(host_values[hosts[0]]),
                              validation.table_note(host_values[hosts[0]])))
        warnings = validation.tls_notices(host_values.get(cluster.head.name) or {}, cluster.head.address,
                                          self.vault_file)
        if warnings:
            result["warnings"] = warnings
        if unchecked:
            # The stage plays skip the roles' own per-host spec check (this one covers it): say what it could not.
            result["not_checked"] = sorted(unchecked)
            result["msg"] += "; not checked (its value refers to a variable only a role defines): %s" % ", ".join(
                result["not_checked"])
        return result
