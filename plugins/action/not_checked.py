# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Say which check this run does not make on which nodes, and why: printed, and listed in the doctor's report."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.modules import not_checked as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        nodes = list(args["nodes"])
        msg = args["msg"] or "%s not checked on %s: %s" % (args["check"], ", ".join(nodes), args["reason"])
        # Shown as debug's message is (a documented internal key): a run's reader sees why, not only the report.
        result.update(changed=False, msg=msg, _ansible_verbose_always=True, skipped_checks=[
            {"node": node, "check": args["check"], "reason": args["reason"]} for node in nodes])
        return result
