# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's verdict, on the controller: the drift table computed once from the run's findings, failing the run
when it holds an error."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import doctor_verdict, drift
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain
from ansible_collections.dgxspark.ds41f.plugins.modules import doctor_report as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        directory = self._task.args.get("report_dir") or drift.report_dir()
        try:
            findings = doctor_verdict.read_findings(directory)
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="no findings in %s (%s): the doctor's report callback is not active. "
                          "Fix: run `ds41f doctor`, or set ANSIBLE_STDOUT_CALLBACK=dgxspark.ds41f.drift_report."
                          % (directory, exc))
            return result
        # The one place the verdict is computed: the callback renders what this task returns.
        found = doctor_verdict.verdict(findings, plain((task_vars or {}).get("spark_site")))
        n = found["counts"]
        result.update(changed=False, report_dir=directory, **found)
        if n["error"]:
            result.update(failed=True, msg="%d error(s), %d warning(s): see the drift table below and the fix of "
                          "each row" % (n["error"], n["warn"]))
        else:
            result["msg"] = "no errors (%d warning(s))" % n["warn"]
        return result
