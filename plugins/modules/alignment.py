# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: alignment
short_description: Fail unless every node reads the same value for each given setting
version_added: 0.1.0
description:
  - Compares a fact (by default C(ds41f_node) from M(dgxspark.ds41f.node_facts)) across every host of the
    play, on the controller, and fails naming each setting whose value differs, which nodes hold which
    value, and the fix.
  - A cluster whose nodes disagree on kernel, page size, driver or image does not serve correctly, so a
    difference is a hard failure. With O(severity=warn) (a difference worth knowing that does not stop serving,
    such as the ConnectX-7 firmware) each difference is a finding of the doctor instead (RV(findings)) and the task
    does not fail.
options:
  keys:
    description: The settings (keys of the fact) that must agree.
    type: list
    elements: str
    required: true
  fact:
    description:
      - The fact (in each host's C(ansible_facts), as a module returned it) or host variable (a registered
        result, a C(set_fact)) holding each node's readings.
    type: str
    default: ds41f_node
  hosts:
    description: The hosts to compare; defaults to every host of the play.
    type: list
    elements: str
  severity:
    description: C(error) fails the task on a difference; C(warn) reports each difference in RV(findings).
    type: str
    choices: [error, warn]
    default: error
  unread:
    description:
      - What a host without the fact (or with it null) means - C(fail) the task, or C(skip) the host (its reading
        step lists why it was not read, as a node that is not a DGX Spark does).
    type: str
    choices: [fail, skip]
    default: fail
attributes:
  check_mode:
    support: full
    description: Reads facts only.
  diff_mode:
    support: none
    description: Changes nothing.
  idempotent:
    support: full
    description: Reads facts only.
  action:
    support: full
    description: Runs as an action plugin on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Every node runs the same kernel and driver
  dgxspark.ds41f.alignment:
    keys: [kernel, page_size, driver]
  run_once: true

- name: The same ConnectX-7 firmware and rdma-core everywhere (a difference is a warning)
  dgxspark.ds41f.alignment:
    fact: ds41f_fabric_inventory
    keys: [cx7_firmware, rdma_core]
    severity: warn
    unread: skip
  run_once: true
"""

RETURN = r"""
mismatches:
  description: One entry per setting that differs.
  returned: always
  type: list
  elements: dict
  sample: [{setting: kernel, found: "7.0.0-1019-nvidia-64k on dgx1, dgx2; 7.0.0-1019-nvidia on dgx3",
            fix: "boot every node into the same kernel (the kernel stage pins it)."}]
findings:
  description:
    - With O(severity=warn), the same differences as the doctor's rows (node C(all), severity warn, the object
      C({kind=alignment, name=<setting>})).
  returned: always
  type: list
  elements: dict
unread:
  description: The hosts left out because they hold no reading (O(unread=skip)).
  returned: always
  type: list
  elements: str
"""
