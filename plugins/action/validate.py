# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Controller-only validation of the site and recipe: runs before any host is touched."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain

ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "roles")
# Variables the inventory plugin derives; a different value in hostvars means the inventory was edited by hand.
DERIVED = ("spark_rank", "spark_links", "spark_nccl_hcas", "ansible_host")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        hosts = list(self._task.args.get("hosts") or task_vars["ansible_play_hosts_all"])
        hostvars = task_vars["hostvars"]
        problems = []

        site = plain(hostvars[hosts[0]].get("spark_site"))
        if not site:
            result.update(failed=True, msg="%s is not from the dgxspark.ds41f.spark_topology inventory plugin. "
                          "Fix: point -i at a site file (*.spark.yml)." % hosts[0])
            return result
        try:
            cluster = topology.build(site)
        except topology.TopologyError as exc:
            result.update(failed=True, msg=str(exc), problems=[str(p) for p in exc.problems])
            return result
        if sorted(hosts) != sorted(n.name for n in cluster.nodes):
            problems.append(topology.Problem(
                "hosts", "the play targets %s but the site has %s." % (", ".join(sorted(hosts)),
                                                                     ", ".join(n.name for n in cluster.nodes)),
                "run stages against the whole cluster; use --limit only for read-only checks."))

        specs = recipe.load_role_specs(ROLES_DIR, yaml.safe_load)
        names = sorted({name for options in specs.values() for name in options} | {"serve_max_model_len"})
        seen = set()
        for host in hosts:
            if host not in [n.name for n in cluster.nodes]:
                continue
            hv = hostvars[host]
            for key in DERIVED:
                expected = cluster.hostvars(host)[key]
                if plain(hv.get(key)) != expected:
                    problems.append(topology.Problem(
                        "%s.%s" % (host, key), "differs from what the site file derives.",
                        "remove the hand-set %s; the inventory plugin owns it." % key))
            values = {}
            for name in names:
                try:
                    if name in hv:
                        values[name] = plain(hv[name])
                except AnsibleError:
                    continue  # refers to a role default; the role's own argument spec checks it at run time
            for problem in recipe.check_vars(values, specs) + recipe.cross_checks(cluster, values):
                text = str(problem)
                if text not in seen:  # group vars repeat on every host: report each once
                    seen.add(text)
                    problems.append(problem)

        if problems:
            result.update(failed=True, problems=[str(p) for p in problems],
                          msg="invalid site or recipe (%d problem%s):\n%s" % (
                              len(problems), "" if len(problems) == 1 else "s",
                              "\n".join("  - %s" % p for p in problems)))
            return result
        result.update(changed=False, shape=cluster.shape.name, nodes=[n.name for n in cluster.nodes],
                      msg="site %s: %d nodes, %d fabric paths; %d recipe variables checked against %d roles" % (
                          cluster.shape.name, len(cluster.nodes), len(cluster.cable_table()), len(values), len(specs)))
        return result
