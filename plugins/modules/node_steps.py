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
  - Each step module declares its AnsibleModule arguments as C(MODULE_SPEC) and does its work in C(run(module)).
    Here its arguments are checked against that spec with Ansible's public argument validator, and C(run) gets
    an object with the step's C(params), this call's check mode, and this call's AnsibleModule for running
    commands, finding binaries and moving files; its C(exit_json) and C(fail_json) end the step only.
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
  sources:
    description:
      - The source of each step's module, by its short name. The action plugin sends them; kept out of the node's
        log.
    type: dict
    required: true
  secrets:
    description:
      - The arguments that a step's module marks C(no_log), by step name, sent apart from O(steps) so that the
        node's log and the result mask them, as the module alone would. The action plugin sends them.
    type: dict
    default: {}
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

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError

# Module sources arrive as text and import their module_utils by name; a module_utils file is in this payload only
# if this file names it. `_payload` is never called: its imports put every step module's module_utils in the
# payload without loading them (tests/unit/foundation/test_node_steps.py keeps the list whole).


def _payload():  # pragma: no cover
    from ansible.module_utils.urls import open_url  # noqa: F401

    from ansible_collections.dgxspark.ds41f.plugins.module_utils import (  # noqa: F401
        args,
        boot_markers,
        config_layers,
        converge,
        docker_daemon,
        engine_progress,
        engine_state,
        exposure,
        fabric_check,
        fabric_strays,
        firewall,
        foreign_files,
        fragmentation,
        kernel_plan,
        launch,
        links,
        live_checks,
        lldp,
        manifest,
        memory_saver_state,
        netplan,
        packages,
        proxy,
        qualify,
        redaction,
        run_all,
        scrub,
        swap_plan,
        topology,
        transfer,
        transit,
    )
    from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import (  # noqa: F401
        boot,
        dgx_os,
        dkms,
        dpkg,
        drm,
        efi,
        fan,
        gpu,
        host,
        kmod,
        mok,
        platform,
        rdma,
    )


# The keywords of a MODULE_SPEC that ArgumentSpecValidator takes (the rest, supports_check_mode, are read here).
VALIDATOR_KEYS = ("argument_spec", "mutually_exclusive", "required_together", "required_one_of", "required_if",
                  "required_by")
SPEC_KEYS = VALIDATOR_KEYS + ("supports_check_mode",)


class StepExit(BaseException):
    """A step's exit_json or fail_json: it ends the step's run() with its result. A BaseException, as SystemExit
    is, so that a step module's own `except Exception` around its exit lets it through."""

    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


def exit_result(msg, kwargs):
    result = dict(kwargs, failed=True, msg=str(msg))
    error = result.get("exception")
    if isinstance(error, BaseException):  # a traceback, as a string the result can carry
        result["exception"] = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return result


class StepModule:
    """What a step module's run(module) is given in place of its AnsibleModule: the step's validated params and
    this call's check mode; exit_json and fail_json end the step; commands, binaries, files and warnings go through
    the call's own AnsibleModule (whose fail_json, while a step runs, ends that step only)."""

    def __init__(self, call, params, spec):
        self.call = call
        self.params = params
        self.argument_spec = spec["argument_spec"]
        self.supports_check_mode = bool(spec.get("supports_check_mode"))
        self.check_mode = call.check_mode

    def exit_json(self, **result):
        raise StepExit(result)

    def fail_json(self, msg, **kwargs):
        raise StepExit(exit_result(msg, kwargs))

    def run_command(self, *args, **kwargs):
        return self.call.run_command(*args, **kwargs)

    def get_bin_path(self, *args, **kwargs):
        return self.call.get_bin_path(*args, **kwargs)

    def atomic_move(self, *args, **kwargs):
        return self.call.atomic_move(*args, **kwargs)

    def warn(self, *args, **kwargs):
        return self.call.warn(*args, **kwargs)

    def log(self, *args, **kwargs):
        return self.call.log(*args, **kwargs)

    @property
    def tmpdir(self):
        return self.call.tmpdir


def secret_values(argument_spec, params):
    """The values of the options marked no_log (suboptions too), as strings, to mask as AnsibleModule does."""
    found = set()

    def leaves(value):
        if isinstance(value, dict):
            for item in value.values():
                leaves(item)
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                leaves(item)
        elif isinstance(value, str):
            if value:
                found.add(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.add(str(value))

    for name, opts in (argument_spec or {}).items():
        value = (params or {}).get(name)
        if value is None:
            continue
        if opts.get("no_log"):
            leaves(value)
        elif opts.get("options"):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    found.update(secret_values(opts["options"], item))
    return found


def masked(result, secrets):
    """The result with every no_log value masked; booleans and None kept, as AnsibleModule's exit keeps them."""
    if not secrets:
        return result
    kept = {k: v for k, v in result.items() if v is None or isinstance(v, bool)}
    out = remove_values(result, secrets)
    out.update(kept)
    return out


def load_step(source, module):
    """The step module's MODULE_SPEC and run, from its source run under a name that is not __main__ (so its own
    main() does not start)."""
    namespace = {"__name__": "dgxspark_ds41f_step_" + module}
    exec(compile(source, "dgxspark.ds41f." + module, "exec"), namespace)  # noqa: S102
    spec, run = namespace.get("MODULE_SPEC"), namespace.get("run")
    if not isinstance(spec, dict) or not isinstance(spec.get("argument_spec"), dict) or not callable(run):
        raise TypeError("%s has no MODULE_SPEC with an argument_spec and no run(module)" % module)
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise TypeError("%s's MODULE_SPEC has %s, which a step cannot honour" % (module, ", ".join(unknown)))
    return spec, run


def run_step(source, module, args, call):
    """One module's run(module) in this process, on its validated args; its result dict."""
    spec, params = {}, {}
    try:
        spec, run = load_step(source, module)
        checked = ArgumentSpecValidator(**{k: spec[k] for k in VALIDATOR_KEYS if k in spec}).validate(
            dict(args or {}))
        params = checked.validated_parameters
        if checked.error_messages:  # each error names its argument, as the module alone would say it
            result = {"failed": True, "msg": "; ".join(
                ("Unsupported parameters for (dgxspark.ds41f.%s) module: %s" % (module, text))
                if isinstance(error, UnsupportedError) else text
                for error, text in zip(checked.errors, checked.error_messages, strict=True))}
        elif call.check_mode and not spec.get("supports_check_mode"):
            result = {"skipped": True, "changed": False,
                      "msg": "remote module (dgxspark.ds41f.%s) does not support check mode" % module}
        else:
            call.step_running = True
            try:
                run(StepModule(call, params, spec))
            finally:
                call.step_running = False
            result = {"failed": True, "msg": "%s returned nothing (it never called exit_json or fail_json)" % module}
    except StepExit as done:
        result = done.result
    except (Exception, SystemExit):  # a module that crashed: its traceback is the answer, as Ansible would show it
        result = {"failed": True, "msg": "%s raised: %s" % (module, traceback.format_exc().strip().splitlines()[-1]),
                  "exception": traceback.format_exc()}
    result = masked(result, secret_values(spec.get("argument_spec"), params))
    for key in ("invocation", "warnings", "deprecations"):  # the call reports warnings once, for all steps
        result.pop(key, None)
    return result


def run_steps(steps, sources, secrets, call):
    """Every step's result in order; outside check mode the first failure skips the rest."""
    results = []
    failed = None
    for step in steps:
        head = {"step": step["name"], "module": step["module"], "id": step.get("id")}
        if failed is not None:
            results.append(dict(head, skipped=True, changed=False,
                                msg="not run: the step before it failed (%s)" % failed))
            continue
        args = dict(step.get("args") or {}, **(secrets.get(step["name"]) or {}))
        result = dict(run_step(sources[step["module"]], step["module"], args, call), **head)
        if result.get("failed") and not call.check_mode:
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
    """node_steps' AnsibleModule. While a step runs, a fail_json of its own (run_command's check_rc,
    get_bin_path's required, atomic_move's errors, all called for the step) ends that step, not the call."""

    step_running = False

    def fail_json(self, msg, **kwargs):
        if self.step_running:
            raise StepExit(exit_result(msg, kwargs))
        super().fail_json(msg, **kwargs)


ARGUMENT_SPEC = {
    "steps": {"type": "list", "elements": "dict", "required": True},
    # The modules' sources and the steps' secrets stay out of the node's log (and the secrets out of the result).
    "sources": {"type": "dict", "required": True, "no_log": True},
    "secrets": {"type": "dict", "default": {}, "no_log": True},
}


def main():
    module = StepsModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    steps, sources = module.params["steps"], module.params["sources"]
    for i, step in enumerate(steps):
        missing = [k for k in ("name", "module") if not step.get(k)]
        if missing or step["module"] not in sources:
            module.fail_json(msg="steps[%d]: no %s. Fix: call node_steps through its action plugin, with a name "
                             "and a module for every step." % (i, missing[0] if missing else "module source"))
    out = summary(run_steps(steps, sources, module.params["secrets"], module))
    # ansible-core 2.19 returns the call's arguments as `invocation` unless the module gives its own: the names.
    out["invocation"] = {"module_args": {"steps": [s["name"] for s in steps]}}
    if out.get("failed"):
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
