# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Compare one fact across every node of the play, on the controller."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils.alignment import mismatches
from ansible_collections.dgxspark.ds41f.plugins.module_utils.drift import ACROSS_NODES
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import host_fact, plain
from ansible_collections.dgxspark.ds41f.plugins.modules import alignment as module_doc


def finding(mismatch):
    """A difference as the doctor's row about every node, with its object as data (a warning)."""
    return {"node": "all", "setting": mismatch["setting"], "expected": ACROSS_NODES, "found": mismatch["found"],
            "fix": mismatch["fix"], "severity": "warn",
            "object": {"kind": "alignment", "name": mismatch["setting"], "node": "all"}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        fact = args["fact"]
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
        if missing and args["unread"] == "fail":
            result.update(failed=True, msg="no %s fact for %s. Fix: run the reading task on every node first." % (
                fact, ", ".join(missing)))
            return result
        found = mismatches(readings, keys)
        warn = args["severity"] == "warn"
        result.update(changed=False, mismatches=[] if warn else found, checked=keys, nodes=sorted(readings),
                      unread=missing, findings=[finding(m) for m in found] if warn else [])
        left_out = " (%s not read: %s)" % (fact, ", ".join(missing)) if missing else ""
        if found:
            result.update(failed=not warn, msg="nodes differ (%d)%s:\n%s" % (len(found), left_out, "\n".join(
                "  - %s: %s. Fix: %s" % (m["setting"], m["found"], m["fix"]) for m in found)))
            if warn:  # shown by every callback, as a run does not fail on it
                result["warnings"] = ["%s differs across nodes: %s. Fix: %s" % (m["setting"], m["found"], m["fix"])
                                      for m in found]
        else:
            result["msg"] = "%d nodes agree on %s%s" % (len(readings), ", ".join(keys), left_out)
        return result
