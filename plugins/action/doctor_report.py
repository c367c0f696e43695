# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's verdict, on the controller: fail the run when the drift table holds an error."""

from __future__ import annotations

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift
from ansible_collections.dgxspark.ds41f.plugins.modules import doctor_report as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        directory = self._task.args.get("report_dir") or drift.report_dir()
        try:
            rows = drift.read_rows(directory)
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="no drift rows in %s (%s): the doctor's report callback is not active. "
                          "Fix: run `ds41f doctor`, or set ANSIBLE_STDOUT_CALLBACK=dgxspark.ds41f.drift_report."
                          % (directory, exc))
            return result
        n = drift.counts(rows)
        result.update(changed=False, counts=n, report_dir=directory)
        if n["error"]:
            result.update(failed=True, msg="%d error(s), %d warning(s): see the drift table below and the fix of "
                          "each row" % (n["error"], n["warn"]))
        else:
            result["msg"] = "no errors (%d warning(s))" % n["warn"]
        return result
