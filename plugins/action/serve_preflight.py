# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Controller-only preflight of the serve stage over every node's readings (see module_utils/serve_preflight)."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import serve_preflight
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import host_fact, plain
from ansible_collections.dgxspark.ds41f.plugins.modules import serve_preflight as module_doc

SETTINGS = ("replace", "allow_reshape", "restart", "unqualified_shape", "master_port", "release", "image", "image_id")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        args = self._task.args
        hostvars = task_vars["hostvars"]
        hosts = list(args.get("hosts") or task_vars["ansible_play_hosts_all"])
        check_fabric = plain(args.get("fabric", True))
        nodes, missing = [], []
        for host in hosts:
            hv = hostvars[host]
            reading = {"name": host, "rank": plain(hv.get("spark_rank")), "node": host_fact(hv, "ds41f_node"),
                       "serve": host_fact(hv, "ds41f_serve"), "spec": plain(hv.get("serve_spec")),
                       "fabric": plain(hv.get("serve_fabric_verdict")) if check_fabric else None}
            read = plain(hv.get("serve__read")) or {}  # the role's read of this node in this run
            if read.get("failed"):  # its facts, if any, are an older run's (the fact cache): judged as unread
                reading["unread"] = (str(read.get("msg") or "").strip().splitlines() or ["its read failed"])[0][:200]
            if (reading["serve"] is None and "unread" not in reading) or reading["spec"] is None:
                missing.append(host)
            nodes.append(reading)
        if missing:
            result.update(failed=True, msg="no serve readings or launch spec for %s. Fix: run the reading tasks "
                                           "on every node first." % ", ".join(missing))
            return result
        nodes.sort(key=lambda n: n["rank"])
        settings = {k: plain(args.get(k)) for k in SETTINGS}
        problems, plan = serve_preflight.check(nodes, plain(task_vars["spark_shape"]), settings)
        result.update(changed=False, problems=problems, **plan)
        result["drift"] = plan["causes"]  # each cause as the doctor's row, on its node
        if problems:
            # Past a refusal the guard, the API key file and the watchdog files are still compared (their call
            # does not depend on the verdict); starting or keeping the engine, readiness and smoke are not checked.
            if plan["causes"]:
                why = "; ".join("%s %s is %s" % (c["node"], c["setting"], c["found"]) for c in plan["causes"][:2])
            elif plan["unread"]:
                why = "the serving state of %s was not read (that node's row names why)" % ", ".join(plan["unread"])
            else:
                why = ("a start would replace the running engines on %s without consent (a rank does not run its "
                       "launch spec: see the serving group's rows)" % ", ".join(plan["replacing"]))
            reason = "the serve preflight refuses: %s" % why
            check = "serve stage past its preflight (start or keep, readiness, boot-log markers, smoke request)"
            result["skipped_checks"] = [{"node": n["name"], "check": check, "reason": reason} for n in nodes]
            result.update(failed=True, msg="serve preflight refuses to start (%d problem%s):\n%s" % (
                len(problems), "" if len(problems) == 1 else "s", "\n".join("  - %s" % p for p in problems)))
        elif plan["start"]:
            result["msg"] = "preflight passed: starting every rank%s" % (
                " (replacing the engine on %s)" % ", ".join(plan["replacing"]) if plan["replacing"] else "")
        else:
            result["msg"] = "preflight passed: every rank already runs its launch spec"
        if plan.get("unchecked") and not problems:
            result["msg"] += "; not checked here: %s" % "; ".join(plan["unchecked"])
        return result
