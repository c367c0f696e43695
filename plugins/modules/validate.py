# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: validate
short_description: Validate the site and recipe on the controller before any host is touched
version_added: 0.1.0
description:
  - Rebuilds the cluster model from the site file the inventory plugin read and checks that the
    hostvars still match it (a hand-edited inventory is refused).
  - "Checks every recipe variable that a role of this collection declares in its
    C(meta/argument_specs.yml) strictly - a quoted boolean or number is an error, not a coercion - with the
    range, element count or pin its description declares (C(Range: 1 to 65535.), C(At least 1 element.),
    C(Pin: <regex>, <what>.)), and the rules that span variables and the shape (context against the shape,
    guard thresholds, distinct listener ports, sysctl values that are not booleans)."
  - Renders every rank's launch spec as the serve stage does and refuses what the render refuses (a flag
    the shape owns in C(serve_args), a memory fraction outside (0, 1]); where the controller's Python
    imports vLLM, puts every rank's command through vLLM's own argument parser too.
  - Runs entirely on the controller (an action plugin); it opens no connection to any node.
  - The stage playbooks run their role without its own per-host argument spec check (C(rolespec_validate)
    false), since this check, made once for every host, covers it. A variable whose value refers to a variable only a
    role defines cannot be read here; it is listed in RV(not_checked) and in the message.
  - Fails with one line per problem, each naming the field and the fix.
options:
  hosts:
    description: The hosts whose variables to check; defaults to every host of the play.
    type: list
    elements: str
attributes:
  check_mode:
    support: full
    description: Reads only; behaves the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
  idempotent:
    support: full
    description: Reads only.
  action:
    support: full
    description: Runs as an action plugin on the controller.
notes:
  - The stage playbooks import C(playbooks/validate.yml) first, tagged C(always); its first play fails when
    C(spark_cluster) has no hosts (a site file that did not parse, without C(unparsed_is_failed)).
  - C(docs/site-file.md) lists every rule.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Validate the site and recipe
  dgxspark.ds41f.validate:
  run_once: true
"""

RETURN = r"""
shape:
  description: The validated shape.
  returned: success
  type: str
  sample: tp4-ring
nodes:
  description: The nodes in rank order.
  returned: success
  type: list
  elements: str
problems:
  description: One line per problem (field, message, fix).
  returned: failure
  type: list
  elements: str
not_checked:
  description: Variables whose value refers to a variable only a role defines, so it cannot be read here and
    is not checked; the stage plays rely on this check and skip the roles' own.
  returned: when there are any
  type: list
  elements: str
"""
