# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_scrub
short_description: Hash every file of this node's checkpoint in full now (ds41f doctor --deep)
version_added: 0.4.0
description:
  - Runs the checkpoint scrub the model stage installs on the node (its program and config; the same run its timer
    starts every hour, without waiting for the period) and waits for it at most O(budget) seconds. The scrub reads
    every file of the checkpoint and hashes it against the manifest the stage keeps beside it, at the lowest CPU
    and I/O priority, and writes its result to its state file and node_exporter's textfile folder.
  - A scrub already running (the timer's) is not started twice - this run waits for it and takes its result.
  - Returns the result; the model stage's check (M(dgxspark.ds41f.model_check)) reads the state file and names each
    bad file as a row. Where the scrub is not installed, or left no result within the budget, the scrub is listed
    under RV(skipped_checks) with the reason.
options:
  program:
    description: The scrub program the model stage installs on the node.
    type: path
    required: true
  config:
    description: Its config (JSON) that the model stage writes; names the checkpoint, its manifest and the state file.
    type: path
    required: true
  budget:
    description: Seconds this node's scrub may take (C(model_scrub_timeout)); the scrub stops itself before and
      records how far it got.
    type: int
    required: true
attributes:
  check_mode:
    support: partial
    description: Runs in check mode, where it only says that it did not scrub.
    details: The scrub reads the checkpoint and writes its own result (state file and metric), so in check mode
      nothing runs and the scrub is listed as not checked; the doctor runs this with C(check_mode - false), and only
      when asked (C(ds41f doctor --deep)).
  diff_mode:
    support: none
    description: Nothing it writes is a setting; its result is the state file.
  idempotent:
    support: partial
    description: Every run reads the checkpoint again and replaces the scrub's state and metric (their times);
      it changes nothing else and always reports no change.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Hash every file of the checkpoint now
  dgxspark.ds41f.model_scrub:
    program: /usr/local/lib/ds41f/scrub/ds41f-model-scrub.py
    config: /etc/ds41f/model-scrub.json
    budget: 21600
  check_mode: false
"""

RETURN = r"""
progress:
  description: One line - what the scrub read and found, or why it did not.
  returned: always
  type: str
rc:
  description: The scrub program's exit status (null when it had to be stopped).
  returned: always
  type: int
output:
  description: The program's last lines (its journal when the timer runs it).
  returned: always
  type: list
  elements: str
scrub:
  description: The state the scrub wrote (when it ran, what it read, each bad file), null when it left none.
  returned: always
  type: dict
skipped_checks:
  description: The scrub as not checked now, with the reason, when it did not run or left no result.
  returned: always
  type: list
  elements: dict
"""

import json
import os
import subprocess
import sys
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import scrub

CHECK = "checkpoint scrub now (ds41f doctor --deep)"
# Past the budget, the program has stopped itself and written its result: this much more, then it is stopped.
GRACE_S = 60

MODULE_SPEC = dict(argument_spec={
    "program": {"type": "path", "required": True},
    "config": {"type": "path", "required": True},
    "budget": {"type": "int", "required": True},
}, supports_check_mode=True)


def not_scrubbed(module, reason, **result):
    module.exit_json(changed=False, progress="not scrubbed: %s" % reason, scrub=None,
                     skipped_checks=[{"check": CHECK, "reason": reason}], **dict({"rc": None, "output": []}, **result))


def run(module):
    p = module.params
    if p["budget"] < 1:
        module.fail_json(msg="budget: %d is not a number of seconds above 0. Fix: give the node's time budget "
                             "(model_scrub_timeout)." % p["budget"])
    if module.check_mode:
        not_scrubbed(module, "a run in check mode starts no scrub (ds41f doctor --deep runs it outside check mode)")
    missing = [path for path in (p["program"], p["config"]) if not os.path.isfile(path)]
    if missing:
        not_scrubbed(module, "the scrub is not installed on this node (no %s). Fix: ds41f run model installs it" %
                     " and no ".join(missing))
    try:
        with open(p["config"]) as handle:
            state_file = json.load(handle)["state_file"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        not_scrubbed(module, "its config %s cannot be read (%s). Fix: ds41f run model writes it" % (p["config"], exc))
    asked = time.time()
    argv = [sys.executable, p["program"], p["config"], "--budget", str(p["budget"])]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=p["budget"] + GRACE_S)
        rc, output = done.returncode, (done.stdout + done.stderr).splitlines()[-10:]
    except subprocess.TimeoutExpired:
        rc, output = None, ["stopped: no result %d s past its budget of %d s" % (GRACE_S, p["budget"])]
    state = scrub.load(state_file)
    if not isinstance(state, dict) or state.get("unusable") or (state.get("finished") or 0) < asked:
        not_scrubbed(module, "the scrub left no result (exit %s: %s)" % (rc, " / ".join(output[-2:]) or "no output"),
                     rc=rc, output=output)
    module.exit_json(changed=False, progress=scrub.summary(state), rc=rc, output=output, scrub=state,
                     skipped_checks=[])


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
