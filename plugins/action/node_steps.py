# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Check the steps on the controller, attach each step's module source, render managed_files templates, then run
them all on the node in one module call."""

from __future__ import annotations

import ast
import importlib
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.action.managed_files import rendered_args

# The modules a step may run: each works on its own node (no controller work during its run, no Ansible
# connection of its own), and node_steps' payload carries their module_utils.
STEP_MODULES = (
    "api_key_file", "docker_daemon", "engine_log", "fabric_check", "fabric_inventory", "fabric_links",
    "fabric_preflight", "fabric_transit", "grub_boot", "host_firewall", "kernel_packages", "live_state",
    "lldp_neighbors", "managed_files", "memory_guard", "memory_saver", "model_check", "model_fetch",
    "model_fragmentation", "model_manifest", "model_scrub", "mok_key", "netplan_cx7", "node_facts", "node_qualify",
    "package_purged", "serve_facts", "serve_probe", "serve_proxy", "serve_release", "serve_smoke", "spark_host",
    "spark_tuning", "sshd_effective", "swap_file", "sysctl_file", "unit_policy", "watchdog_access", "watchdog_key",
)
STEP_KEYS = ("name", "module", "args", "id", "when")
MODULES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "modules")


def step_problem(i, step):
    """What is wrong with one step, naming the field and the fix, or None."""
    where = "steps[%d]" % i
    if not isinstance(step, dict):
        return "%s: is not a mapping. Fix: give name, module and args." % where
    unknown = sorted(set(step) - set(STEP_KEYS))
    if unknown:
        return "%s.%s: is not a step setting. Fix: use %s." % (where, unknown[0], ", ".join(STEP_KEYS))
    for key in ("name", "module"):
        if not isinstance(step.get(key), str) or not step[key]:
            return "%s.%s: missing. Fix: give the step's %s as a string." % (where, key, key)
    if step["module"] not in STEP_MODULES:
        return "%s.module: %s cannot run as a step. Fix: use one of %s, or run it as a task of its own." % (
            where, step["module"], ", ".join(STEP_MODULES))
    if not isinstance(step.get("args", {}), dict):
        return "%s.args: is not a mapping. Fix: give the module's arguments as a mapping." % where
    if not isinstance(step.get("when", True), bool):
        return "%s.when: %r is not a boolean. Fix: give a condition that is true or false, e.g. {{ x | bool }}." % (
            where, step["when"])
    return None


def lone_step_named(steps, task_name):
    """A lone step stands in for its task: without a name of its own it takes the task's (reports name it so)."""
    if len(steps) == 1 and isinstance(steps[0], dict) and not steps[0].get("name"):
        return [dict(steps[0], name=task_name)]
    return steps


def module_source(name):
    with open(os.path.join(MODULES_DIR, name + ".py"), encoding="utf-8") as handle:
        return handle.read()


def literal_argument_spec(source):
    """MODULE_SPEC's argument_spec when the module's source writes it as a literal (MODULE_SPEC = dict(argument_spec=
    {...})), else None."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODULE_SPEC" for t in node.targets)
                and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "dict"):
            for keyword in node.value.keywords:
                if keyword.arg == "argument_spec":
                    try:
                        return ast.literal_eval(keyword.value)
                    except (ValueError, TypeError, SyntaxError):
                        return None
    return None


def no_log_options(name, source):
    """The options that a step module marks no_log, from its MODULE_SPEC: read from the source where it is a literal.
    An import runs in every fork of every task (none shares the controller's imports), compiling the module and its
    module_utils anew: about a tenth of a doctor run's controller CPU."""
    spec = literal_argument_spec(source)
    if spec is None:
        spec = importlib.import_module("ansible_collections.dgxspark.ds41f.plugins.modules." + name).MODULE_SPEC[
            "argument_spec"]
    return sorted(k for k, v in spec.items() if v.get("no_log"))


def module_args(steps):
    """node_steps' arguments for steps (each with name, module, args and maybe id): the steps without their no_log
    arguments, those apart in `secrets` (by step name), and each module's source once in `sources`."""
    sent, secrets, sources, hidden_by_module = [], {}, {}, {}
    for step in steps:
        if step["module"] not in sources:
            sources[step["module"]] = module_source(step["module"])
            hidden_by_module[step["module"]] = no_log_options(step["module"], sources[step["module"]])
        hidden = hidden_by_module[step["module"]]
        args = dict(step.get("args") or {})
        held = {k: args.pop(k) for k in hidden if k in args}
        if held:
            secrets[step["name"]] = held
        sent.append(dict(step, args=args))
    return {"steps": sent, "sources": sources, "secrets": secrets}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        steps = self._task.args.get("steps")
        if not isinstance(steps, list) or not steps:
            raise AnsibleActionFail("steps: give a list of steps (name, module, args). Fix: list at least one.")
        steps = lone_step_named(steps, self._task.name or self._task.action)
        names = set()
        sent = []
        for i, step in enumerate(steps):
            problem = step_problem(i, step)
            if not problem and step["name"] in names:
                problem = "steps[%d].name: %r is used twice. Fix: give every step its own name." % (i, step["name"])
            if problem:
                raise AnsibleActionFail(problem)
            names.add(step["name"])
            if not step.get("when", True):  # a step whose condition is false is left out, as a task's would be
                continue
            args = dict(step.get("args") or {})
            if step["module"] == "managed_files":
                args = rendered_args(self, args, task_vars)
            step = {k: v for k, v in step.items() if k != "when"}
            sent.append(dict(step, args=args))
        if not sent:
            result.update(skipped=True, changed=False, false_condition="every step's when", results=[], steps={},
                          msg="no step to run: every step's condition is false")
            return result
        result.update(self._execute_module("dgxspark.ds41f.node_steps", module_args=module_args(sent),
                                           task_vars=task_vars))
        return result
