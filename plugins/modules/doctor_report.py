# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: doctor_report
short_description: The doctor's verdict - its drift table, failing when that holds an error
version_added: 0.1.0
description:
  - Reads what the run found, which the C(dgxspark.ds41f.drift_report) callback saved just before this task
    (C(findings.json)), and computes the verdict once, on the controller - every row folded into the one of its
    cause (by object and path, with the site's fabric paths), the count per severity, and the colour of every node
    and path of the topology picture - then fails when any row has severity C(error); warnings alone pass. The
    callback renders what this task returns.
  - Fails closed when there are no findings to read (the callback is not active), rather than passing a doctor
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
rows:
  description: The drift table, one row per cause, errors first - node, stage, setting, expected, found, fix,
    severity, and as data the object the row is about.
  returned: when findings were read
  type: list
  elements: dict
counts:
  description: Rows per severity.
  returned: when findings were read
  type: dict
  sample: {error: 3, warn: 0}
picture:
  description: The status of every node and fabric path, for the topology picture (null without a site).
  returned: when findings were read
  type: dict
  sample: {nodes: {dgx1: ok, dgx2: drift}, paths: {10.12.1.0/24: down}}
report_dir:
  description: Where the findings were read from.
  returned: when findings were read
  type: str
"""
