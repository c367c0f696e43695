# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Compare one fact across every node of the play, on the controller."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils.alignment import mismatches
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import host_fact, plain
from ansible_collections.dgxspark.ds41f.plugins.modules import alignment as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        args = self._task.args
        fact = args.get("fact", "ds41f_node")
        keys = list(args.get("keys") or [])
        hosts = list(args.get("hosts") or task_vars["ansible_play_hosts_all"])
        readings, missing = {}, []
        for host in hosts:
            host_vars = task_vars["hostvars"][host]
            # a module's fact (ds41f_node) is in ansible_facts; a registered result or set_fact is a variable
            value = host_fact(host_vars, fact)
            if value is None:
                value = plain(host_vars.get(fact))
            if value is None:
                missing.append(host)
            else:
                readings[host] = value
        if missing:
            result.update(failed=True, msg="no %s fact for %s. Fix: run the reading task on every node first." % (
                fact, ", ".join(missing)))
            return result
        found = mismatches(readings, keys)
        result.update(changed=False, mismatches=found, checked=keys, nodes=sorted(readings))
        if found:
            result.update(failed=True, msg="nodes differ (%d):\n%s" % (len(found), "\n".join(
                "  - %s: %s. Fix: %s" % (m["setting"], m["found"], m["fix"]) for m in found)))
        else:
            result["msg"] = "%d nodes agree on %s" % (len(readings), ", ".join(keys))
        return result
