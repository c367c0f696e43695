# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_steps
short_description: Several of this collection's modules on one node in one call
version_added: 0.2.0
description:
  - Runs each step, one of this collection's modules with its arguments, in order and in one Python process on
    the node, so a stage reads and converges a node in one round trip instead of one per module.
  - A step does exactly what its module does alone, with the same code, arguments and checks. It reads first,
    writes only outside check mode, and returns its own result, diff and drift.
  - Outside check mode the first step that fails ends the call; the steps after it are returned as skipped,
    with the failed step named as the reason. In check mode nothing is written, so every step runs and reports,
    as the doctor's stages do.
  - The action plugin reads each step's module on the controller and renders the templates of a
    M(dgxspark.ds41f.managed_files) step there, as that module's own action plugin does.
  - With one step, the call stands in for the module's own task, its result being the step's (with RV(results)
    and RV(steps) beside it). Ansible builds a module's payload once per run for each module type the run uses,
    and this module's payload is built anyway, so a run that sends its other modules through it builds fewer.
options:
  steps:
    description:
      - The steps, in order. Each has C(name) (what the step does, shown in reports as a task name would be;
        a lone step may leave it out and take the task's name), C(module) (the module's short name), C(args) (its
        arguments), and optionally C(id) (the key of its result under RV(steps)) and C(when) (a boolean; a false
        one leaves the step out, as a task's would).
      - C(module) is one of the modules this call can carry; a module that needs the controller during its run,
        or that the collection does not list here, runs as a task of its own.
    type: list
    elements: dict
    required: true
attributes:
  check_mode:
    support: full
    description: Every step runs in check mode; each module's own check mode decides what it reads.
  diff_mode:
    support: full
    description: The diffs of every step, in order.
  idempotent:
    support: full
    description: Each step is its module, and every module it carries is idempotent.
  action:
    support: full
    description: The action plugin sends the steps' modules and renders managed_files templates on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Panic and memory sysctls, in one round trip
  dgxspark.ds41f.node_steps:
    steps:
      - name: Panic and OOM sysctls
        module: sysctl_file
        args: {path: /etc/sysctl.d/60-ds41f-recovery.conf, settings: {kernel.panic: 30}}
      - name: Memory sysctls
        module: sysctl_file
        args: {path: /etc/sysctl.d/61-ds41f-memory.conf, settings: {vm.watermark_boost_factor: 0}}
  register: stage
"""

RETURN = r"""
results:
  description: One result per step, in order, as its module returns it, with C(step) (the step's name) and
    C(module). A step not run has C(skipped) and, in C(msg), why.
  returned: always
  type: list
  elements: dict
steps:
  description: The results of the steps that have an C(id), by that id, for the role's later tasks.
  returned: always
  type: dict
ansible_facts:
  description: The facts every step returned (M(dgxspark.ds41f.node_facts)' C(ds41f_node), for one), set as the
    task's facts as they would be by the module alone.
  returned: when a step returns facts
  type: dict
"""

import json
import traceback

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common import json as module_json

# Module sources arrive as text and import their module_utils by name; a module_utils file is in this payload only
# if this file names it. `_payload` is never called: its imports put every step module's module_utils in the
# payload without loading them (tests/unit/foundation/test_node_steps.py keeps the list whole).


def _payload():  # pragma: no cover
    from ansible.module_utils.urls import open_url  # noqa: F401

    from ansible_collections.dgxspark.ds41f.plugins.module_utils import (  # noqa: F401
        args,
        converge,
        docker_daemon,
        engine_progress,
        engine_state,
        fabric_check,
        fragmentation,
        kernel_plan,
        launch,
        links,
        live_checks,
        lldp,
        manifest,
        memory_saver_state,
        netplan,
        qualify,
        run_all,
        swap_plan,
        topology,
        transfer,
        transit,
    )
    from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import (  # noqa: F401
        boot,
        dkms,
        gpu,
        host,
        kmod,
        mok,
        platform,
        rdma,
    )


def _step_args(args, module, internal):
    out = dict(args or {})
    out.update(internal, _ansible_module_name="dgxspark.ds41f." + module)
    return out


def run_step(source, module, args, internal, profile):
    """One module's source run as its own __main__, in this process; its result dict."""
    returned = []

    def record(self, result):  # exit_json and fail_json hand their result here, then raise SystemExit
        returned.append(result)

    encoder = module_json.get_module_encoder(profile, module_json.Direction.CONTROLLER_TO_MODULE)
    saved = (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, AnsibleModule._record_module_result)
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": _step_args(args, module, internal)},
                                     cls=encoder).encode()
    basic._ANSIBLE_PROFILE = profile
    AnsibleModule._record_module_result = record
    try:
        exec(compile(source, "dgxspark.ds41f." + module, "exec"), {"__name__": "__main__"})  # noqa: S102
    except SystemExit:
        pass
    except Exception:  # a module that crashed: its traceback is the answer, as Ansible would show it
        return {"failed": True, "msg": "%s raised: %s" % (module, traceback.format_exc().strip().splitlines()[-1]),
                "exception": traceback.format_exc()}
    finally:
        basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, AnsibleModule._record_module_result = saved
    if not returned:
        return {"failed": True, "msg": "%s returned nothing (it never called exit_json or fail_json)" % module}
    result = returned[-1]
    for key in ("invocation", "warnings", "deprecations"):  # the call reports warnings once, for all steps
        result.pop(key, None)
    if not isinstance(result.get("exception", ""), str):  # an error summary object: its message is in msg
        result.pop("exception")
    return result


def run_steps(steps, internal, profile, check_mode):
    """Every step's result in order; outside check mode the first failure skips the rest."""
    results = []
    failed = None
    for step in steps:
        head = {"step": step["name"], "module": step["module"], "id": step.get("id")}
        if failed is not None:
            results.append(dict(head, skipped=True, changed=False,
                                msg="not run: the step before it failed (%s)" % failed))
            continue
        result = dict(run_step(step["source"], step["module"], step.get("args"), internal, profile), **head)
        if result.get("failed") and not check_mode:
            failed = step["name"]
        results.append(result)
    return results


def summary(results):
    out = {"changed": any(r.get("changed") for r in results), "results": results,
           "steps": {r["id"]: r for r in results if r.get("id")}}
    facts = {}
    for r in results:  # a step's facts are the task's facts, as they would be of the module alone
        facts.update(r.pop("ansible_facts", None) or {})
    if facts:
        out["ansible_facts"] = facts
    diffs = []
    for r in results:
        diff = r.get("diff")
        diffs.extend(diff if isinstance(diff, list) else [diff] if diff else [])
    if diffs:
        out["diff"] = diffs
    failed = [r for r in results if r.get("failed")]
    if failed:
        out["failed"] = True
        out["msg"] = "; ".join("%s: %s" % (r["step"], r.get("msg") or "failed") for r in failed)
    elif all(r.get("skipped") for r in results):
        out["skipped"] = True
        out["msg"] = "; ".join("%s: %s" % (r["step"], r.get("msg") or "skipped") for r in results)
    if len(results) == 1:
        # One step stands in for its module's own task: the task's result is the step's, with results and steps
        # beside it, so what a role registers reads as the module's result would.
        out.update({k: v for k, v in results[0].items() if k not in ("step", "module", "id", "results", "steps")})
    return out


class StepsModule(AnsibleModule):
    def _log_invocation(self):
        # Each step logs its own invocation, with its own no_log arguments kept out; this call names the steps
        # only (their arguments and module sources would repeat those logs, secrets included).
        self.log("Invoked with steps=%s" % ", ".join(str(s.get("module")) for s in self.params["steps"]))


def main():
    module = StepsModule(argument_spec={"steps": {"type": "list", "elements": "dict", "required": True}},
                         supports_check_mode=True)
    internal = {k: v for k, v in basic._PARSED_MODULE_ARGS.items() if k.startswith("_ansible_")}
    steps = module.params["steps"]
    for i, step in enumerate(steps):
        missing = [k for k in ("name", "module", "source") if not step.get(k)]
        if missing:
            module.fail_json(msg="steps[%d]: no %s. Fix: call node_steps through its action plugin, with a name "
                             "and a module for every step." % (i, missing[0]))
    out = summary(run_steps(steps, internal, basic._ANSIBLE_PROFILE, module.check_mode))
    # The steps' arguments (sources, and what a step keeps out of logs) stay out of the result.
    out["invocation"] = {"module_args": {"steps": [s["name"] for s in steps]}}
    if out.get("failed"):
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
