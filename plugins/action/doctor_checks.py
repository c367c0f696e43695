# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's live checks, on the controller: every node's live readings against the model and recipe."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import live_checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        live_var = args.get("live", "verify_live")
        hostvars = task_vars["hostvars"]
        hosts, missing = {}, []
        for host in task_vars["ansible_play_hosts_all"]:
            registered = plain(hostvars[host].get(live_var))
            if not registered or "live" not in registered:
                missing.append(host)
                continue
            hosts[host] = {"live": registered["live"], "node": plain(hostvars[host].get("ds41f_node")) or {}}
        if missing:
            result.update(failed=True, msg="no %s reading for %s. Fix: run dgxspark.ds41f.live_state on every node "
                          "first (register: %s)." % (live_var, ", ".join(sorted(missing)), live_var))
            return result
        first = hostvars[sorted(hosts)[0]]
        findings = live_checks.evaluate(
            hosts, plain(first["spark_cables"]), int(first["spark_mtu"]),
            float(args.get("startup_gib", 5)), float(args.get("steady_gib", 3)),
            args.get("serve_fix", "ds41f run serve -e serve_replace=true"),
            list(args.get("ignore_env", ["VLLM_API_KEY"])))
        result.update(changed=False, findings=findings, nodes=sorted(hosts),
                      msg="%d finding(s) on %d nodes" % (len(findings), len(hosts)))
        return result
