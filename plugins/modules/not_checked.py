# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: not_checked
short_description: Say which check this run does not make on which nodes, and why
version_added: 0.4.0
description:
  - Runs on the controller and touches no node. A stage uses it where it reads on past a cause and a check of its
    cannot be made because of it (the build node's Docker does not answer, so no node's image can be compared).
  - Prints its message, as C(ansible.builtin.debug) does, and returns RV(skipped_checks), one entry per node,
    which the doctor's report (the C(dgxspark.ds41f.drift_report) callback) lists under "not checked". A message
    alone would be lost there.
options:
  nodes:
    description: The nodes the check is not made on.
    type: list
    elements: str
    required: true
  check:
    description: What is not checked, in a few words.
    type: str
    required: true
  reason:
    description: Why, with what to do about it.
    type: str
    required: true
  msg:
    description: The message to print (by default, the check, the nodes and the reason).
    type: str
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Not checked - every node's image
  dgxspark.ds41f.not_checked:
    nodes: "{{ ansible_play_hosts }}"
    check: image
    reason: dgx1's Docker did not answer (its row), so the image ID the nodes must hold is unknown
  run_once: true
"""

RETURN = r"""
msg:
  description: The message printed.
  returned: always
  type: str
skipped_checks:
  description: One entry per node, C({node, check, reason}).
  returned: always
  type: list
  elements: dict
"""
