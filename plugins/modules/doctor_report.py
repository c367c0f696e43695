# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: doctor_report
short_description: The doctor's verdict - fail when its drift table holds an error
version_added: 0.1.0
description:
  - Reads the rows the C(dgxspark.ds41f.drift_report) callback saved just before this task and fails, on the
    controller, when any row has severity C(error); warnings alone pass.
  - Fails closed when there are no rows to read (the callback is not active), rather than passing a doctor
    that looked at nothing.
  - The last task of C(playbooks/doctor.yml); C(ds41f doctor) runs it with the callback selected.
options:
  report_dir:
    description: The callback's report folder; defaults to C($DS41F_REPORT_DIR), else C(reports/doctor).
    type: path
extends_documentation_fragment: [dgxspark.ds41f.read_only]
attributes:
  check_mode:
    support: full
    description: Reads a file on the controller only; the same in check mode.
  action:
    support: full
    description: Runs as an action plugin on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Fail when the drift table holds an error
  dgxspark.ds41f.doctor_report:
  run_once: true
"""

RETURN = r"""
counts:
  description: Rows per severity.
  returned: when rows were read
  type: dict
  sample: {error: 3, warn: 0}
report_dir:
  description: Where the report was read from.
  returned: when rows were read
  type: str
"""
