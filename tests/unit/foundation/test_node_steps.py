"""node_steps: several modules in one process on a node. Its payload must carry every step module's module_utils,
each step must behave as its module alone (check mode, diff, idempotence), and a failure must stop a converge
but not a check. The module runs here as Ansible runs it on a node: a real Python process fed its arguments."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.action import node_steps as action
from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / "plugins" / "modules"
UTILS = "ansible_collections.dgxspark.ds41f.plugins.module_utils"


def imported_utils(tree, names_are_modules):
    """The module_utils a parsed file imports: dotted module names (``from pkg import a`` names a submodule
    when ``pkg`` is a package of module_utils)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.startswith(UTILS) or node.module.startswith("ansible.module_utils")):
            if node.module in names_are_modules:
                out.update("%s.%s" % (node.module, a.name) for a in node.names)
            else:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith((UTILS, "ansible.module_utils")))
    return out


PACKAGES = {UTILS, UTILS + ".hardware", "ansible.module_utils", "ansible.module_utils.common"}


def test_the_payload_carries_every_step_modules_module_utils():
    tree = ast.parse((MODULES / "node_steps.py").read_text())
    payload = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_payload")
    carried = imported_utils(payload, PACKAGES) | imported_utils(
        ast.Module(body=[n for n in tree.body if n is not payload], type_ignores=[]), PACKAGES)
    for name in action.STEP_MODULES:
        needed = imported_utils(ast.parse((MODULES / (name + ".py")).read_text()), PACKAGES)
        assert needed <= carried, "%s imports %s: add it to node_steps._payload" % (name, sorted(needed - carried))


def run(tmp_path, steps, check_mode=False, diff=True):
    argfile = tmp_path / "args.json"
    sent = dict(action.module_args(steps), _ansible_check_mode=check_mode, _ansible_diff=diff)
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": sent}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "collections"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(MODULES / "node_steps.py"), str(argfile)], capture_output=True,
                          text=True, env=env, timeout=60)
    return json.loads(done.stdout)


def files_step(name, path, content, step_id=None):
    step = {"name": name, "module": "managed_files", "args": {"files": [{"path": str(path), "content": content}]}}
    return dict(step, id=step_id) if step_id else step


def test_each_step_checks_converges_and_then_finds_nothing_to_do(tmp_path):
    a, b = tmp_path / "etc" / "a.conf", tmp_path / "b.conf"
    b.write_text("old\n")
    steps = [files_step("File a", a, "a\n", "a"), files_step("File b", b, "new\n")]

    checked = run(tmp_path, steps, check_mode=True)
    assert checked["changed"] is True and not a.exists() and b.read_text() == "old\n"
    assert [r["step"] for r in checked["results"]] == ["File a", "File b"]
    assert checked["steps"]["a"]["changed_paths"] == [str(a)] and list(checked["steps"]) == ["a"]
    assert {d["after_header"] for d in checked["diff"]} == {str(a), str(b)}
    assert "old" in json.dumps(checked["diff"])
    # The step modules' sources never come back, in whatever keys this ansible-core keeps (2.21 no longer injects
    # `invocation` by default): the head of managed_files' source, as JSON escapes it, is nowhere in the result.
    assert json.dumps(action.module_source("managed_files"))[1:400] not in json.dumps(checked)

    done = run(tmp_path, steps)
    assert done["changed"] is True and a.read_text() == "a\n" and b.read_text() == "new\n"
    again = run(tmp_path, steps)
    assert again["changed"] is False and "diff" not in again and not again.get("failed")


def test_a_failed_step_stops_a_converge_but_not_a_check(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    after = tmp_path / "after.conf"
    steps = [files_step("A folder where a file goes", folder, "x"), files_step("After it", after, "y\n")]

    done = run(tmp_path, steps)
    assert done["failed"] is True and done["msg"].startswith("A folder where a file goes: files[0].path")
    first, second = done["results"]
    assert first["failed"] and second["skipped"] and not after.exists()
    assert second["msg"] == "not run: the step before it failed (A folder where a file goes)"

    checked = run(tmp_path, steps, check_mode=True)
    assert checked["failed"] is True and checked["results"][1]["changed"] is True
    assert not after.exists()


def test_one_step_stands_in_for_its_modules_task(tmp_path):
    # A role registers a one-step call as it registered the module: the step's own keys, msg and diff on top.
    path = tmp_path / "guard.conf"
    checked = run(tmp_path, [files_step("Guard config", path, "g\n", "guard")], check_mode=True)
    assert checked["changed"] is True and checked["changed_paths"] == [str(path)] and not path.exists()
    assert checked["diff"] == checked["results"][0]["diff"] and checked["steps"]["guard"]["changed_paths"]
    assert "step" not in checked and "module" not in checked and checked["results"][0]["step"] == "Guard config"

    folder = tmp_path / "folder"
    folder.mkdir()
    failed = run(tmp_path, [files_step("A folder where a file goes", folder, "x")])
    assert failed["failed"] is True and failed["msg"] == failed["results"][0]["msg"]
    assert not failed["msg"].startswith("A folder where a file goes:")

    two = run(tmp_path, [files_step("One", tmp_path / "one", "1\n"), files_step("Two", tmp_path / "two", "2\n")],
              check_mode=True)
    assert "changed_paths" not in two  # with several steps, each result stays under results only


def test_every_node_steps_task_of_the_collection_passes_the_controllers_step_checks():
    """What the action plugin refuses at run time, found here from the task files: a step of several without a name,
    an unknown setting, a module that cannot run as a step (a templated step, args or when is a run-time value)."""
    import yaml

    from tests.conftest import TASK_FILES, tasks

    found = []
    for path in TASK_FILES:
        for task in tasks(yaml.safe_load(path.read_text())):
            steps = (task.get("dgxspark.ds41f.node_steps") or {}).get("steps")
            if not isinstance(steps, list):
                continue
            for i, step in enumerate(action.lone_step_named(steps, task.get("name") or "task")):
                if not isinstance(step, dict):  # a templated step, a run-time value
                    continue
                runtime = {k: v for k, v in (("when", True), ("args", {})) if isinstance(step.get(k), str)}
                problem = action.step_problem(i, dict(step, **runtime))
                if problem:
                    found.append("%s: %s: %s" % (path.relative_to(ROOT), task.get("name"), problem))
    assert found == []


def test_a_lone_step_takes_the_tasks_name_and_only_a_lone_one():
    assert action.lone_step_named([{"module": "live_state"}], "Read the node") == [
        {"module": "live_state", "name": "Read the node"}]
    assert action.lone_step_named([{"module": "x", "name": "Own"}], "Task") == [{"module": "x", "name": "Own"}]
    two = [{"module": "x"}, {"module": "y", "name": "Y"}]
    assert action.lone_step_named(two, "Task") == two  # several unnamed steps stay refused (steps[0].name)
    assert action.step_problem(0, two[0]) == "steps[0].name: missing. Fix: give the step's name as a string."


def test_a_module_that_crashes_is_a_failed_step_with_its_error(tmp_path):
    steps = [{"name": "Bad argument", "module": "managed_files", "args": {"files": "not a list"}},
             files_step("Next", tmp_path / "n.conf", "n\n")]
    done = run(tmp_path, steps)
    assert done["failed"] and done["results"][0]["failed"] and "files" in done["results"][0]["msg"]
    assert done["results"][1]["skipped"]


@pytest.mark.parametrize("steps, text", [
    ([{"name": "x", "module": "command", "args": {}}], "steps[0].module: command cannot run as a step"),
    ([{"name": "x", "module": "managed_files", "loop": [1]}], "steps[0].loop: is not a step setting"),
    ([{"name": "x", "module": "managed_files", "when": "yes"}], "steps[0].when: 'yes' is not a boolean"),
    ([{"module": "managed_files"}], "steps[0].name: missing"),
    ([{"name": "x", "module": "managed_files", "args": "a=b"}], "steps[0].args: is not a mapping"),
])
def test_a_bad_step_is_refused_on_the_controller_naming_the_field(steps, text):
    problems = [action.step_problem(i, s) for i, s in enumerate(steps)]
    assert problems[0] and problems[0].startswith(text) and "Fix:" in problems[0]


def step_module(name):
    return importlib.import_module("ansible_collections.dgxspark.ds41f.plugins.modules." + name)


def test_every_step_module_declares_its_spec_and_runs_alone_through_it():
    # node_steps passes its own check mode to every step: a step module without it would refuse the doctor. Alone,
    # a step module is its AnsibleModule built from the same spec, handed to the same run().
    for name in action.STEP_MODULES:
        module = step_module(name)
        assert module.MODULE_SPEC["supports_check_mode"] is True, name
        main = next(n for n in ast.parse((MODULES / (name + ".py")).read_text()).body
                    if isinstance(n, ast.FunctionDef) and n.name == "main")
        assert ast.unparse(main.body[0]) == "run(AnsibleModule(**MODULE_SPEC))" and len(main.body) == 1, name
        for opts in module.MODULE_SPEC["argument_spec"].values():  # the action plugin splits top-level ones only
            assert not any(o.get("no_log") for o in (opts.get("options") or {}).values()), name


def test_the_adapter_has_everything_a_step_module_uses_of_its_module():
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    used = set()
    for path in [MODULES / (n + ".py") for n in action.STEP_MODULES] + list((ROOT / "plugins" / "module_utils").rglob(
            "*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and (
                    isinstance(node.value, ast.Name) and node.value.id == "module" or
                    isinstance(node.value, ast.Attribute) and node.value.attr == "module"):
                used.add(node.attr)
    assert {"params", "check_mode", "exit_json", "fail_json", "run_command", "get_bin_path"} <= used
    missing = sorted(a for a in used if not hasattr(node_steps.StepModule, a) and a not in (
        "params", "check_mode", "argument_spec", "supports_check_mode", "call"))
    assert missing == []


def test_the_doctor_names_a_steps_row_after_the_step():
    result = {"changed": True, "results": [
        {"step": "Node map", "changed": True, "drift": [{"setting": "/etc/ds41f/site.json", "expected": "a",
                                                        "found": "b"}]},
        {"step": "Tuning", "changed": False, "skipped": ["nvme coalescing skipped: not a DGX Spark"]},
        {"step": "Sysctls", "changed": True, "path": "/etc/sysctl.d/60.conf"},
    ]}
    rows = drift.rows_from_result("dgx1", "host_baseline", "Host baseline steps", result)
    assert [r["setting"] for r in rows] == ["/etc/ds41f/site.json", "/etc/sysctl.d/60.conf (Sysctls)"]
    (skipped,) = drift.not_checked("dgx1", "Host baseline steps", result)
    assert skipped == {"node": "dgx1", "check": "nvme coalescing", "reason": "not a DGX Spark"}


def test_the_calls_log_line_keeps_out_the_sources_and_the_secrets(monkeypatch):
    from ansible.module_utils.testing import patch_module_args

    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    logged = []
    monkeypatch.setattr(node_steps.StepsModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    steps = [{"name": "Key", "module": "api_key_file", "args": {"path": "/k", "recipe_key": "s3cret-k3y"}}]
    sent = action.module_args(steps)
    assert sent["secrets"] == {"Key": {"recipe_key": "s3cret-k3y"}} and sent["steps"][0]["args"] == {"path": "/k"}
    with patch_module_args(sent):
        node_steps.StepsModule(argument_spec=node_steps.ARGUMENT_SPEC)
    (line,) = logged
    assert "api_key_file" in line and "s3cret-k3y" not in line and "MODULE_SPEC" not in line


def test_the_no_log_options_read_from_the_source_are_the_imported_specs():
    # The controller reads each step module's no_log options from its source (no import in every fork); where the
    # spec is no literal it imports. Either way the answer is the module's own spec.
    literal = 0
    for name in action.STEP_MODULES:
        source = action.module_source(name)
        spec = step_module(name).MODULE_SPEC["argument_spec"]
        assert action.no_log_options(name, source) == sorted(k for k, v in spec.items() if v.get("no_log")), name
        literal += action.literal_argument_spec(source) == spec
    assert literal >= len(action.STEP_MODULES) - 2  # the fallback is the exception
    assert action.no_log_options("api_key_file", action.module_source("api_key_file")) == ["recipe_key"]
    assert action.literal_argument_spec("MODULE_SPEC = dict(argument_spec=SPEC)\n") is None
    assert action.literal_argument_spec("X = 1\n") is None


def test_a_no_log_argument_is_masked_in_the_result_as_the_module_alone_masks_it(tmp_path):
    key = tmp_path / "keys" / "api_key"
    step = {"name": "API key", "module": "api_key_file", "args": {"path": str(key), "recipe_key": "s3cret-k3y"}}
    checked = run(tmp_path, [step], check_mode=True)
    argfile = tmp_path / "alone.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(step["args"], _ansible_check_mode=True)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "collections"), os.environ.get("PYTHONPATH", "")]))
    alone = json.loads(subprocess.run([sys.executable, str(MODULES / "api_key_file.py"), str(argfile)],
                                      capture_output=True, text=True, env=env, timeout=60).stdout)
    assert "s3cret-k3y" not in json.dumps(checked) and "s3cret-k3y" not in json.dumps(alone)
    assert checked["drift"] == alone["drift"] and checked["actions"] == alone["actions"]
    assert checked["changed"] is True and not key.exists()


MODULE_SOURCE = """
from ansible.module_utils.basic import AnsibleModule
MODULE_SPEC = dict(argument_spec={"n": {"type": "int", "required": True}, "pin": {"type": "str", "no_log": True},
                                  "cmd": {"type": "list", "elements": "str"}, "tool": {"type": "str"}},
                   supports_check_mode=True)


def run(module):
    if module.params["cmd"]:
        module.run_command(module.params["cmd"], check_rc=True)
    if module.params["tool"]:
        module.get_bin_path(module.params["tool"], required=True)
    try:  # a module's own broad except around its exit must not keep its result from the call
        module.exit_json(changed=module.check_mode, n=module.params["n"] + 1, pin=module.params["pin"])
    except Exception:
        pass


if __name__ == "__main__":
    raise RuntimeError("main ran")
"""


@pytest.fixture
def call():
    from ansible.module_utils.testing import patch_module_args

    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    with patch_module_args({"steps": [], "sources": {}, "_ansible_check_mode": True}):
        yield node_steps.StepsModule(argument_spec=node_steps.ARGUMENT_SPEC, supports_check_mode=True)


def test_a_step_returns_what_its_run_exits_with_on_validated_args(call):
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    done = node_steps.run_step(MODULE_SOURCE, "x", {"n": "1", "pin": "4321"}, call)
    # "1" converted as the spec says; the no_log pin masked as AnsibleModule masks it
    assert done == {"changed": True, "n": 2, "pin": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}


@pytest.mark.parametrize("args, text", [
    ({}, "missing required arguments: n"),
    ({"n": "one"}, "argument 'n' is of type str and we were unable to convert to int"),
    ({"n": 1, "colour": "red"}, "Unsupported parameters for (dgxspark.ds41f.x) module: colour."),
])
def test_a_step_whose_args_do_not_fit_its_spec_fails_naming_the_argument(call, args, text):
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    done = node_steps.run_step(MODULE_SOURCE, "x", args, call)
    assert done["failed"] is True and done["msg"].startswith(text), done["msg"]


def test_a_fail_json_of_the_calls_own_module_ends_the_step_only(call):
    # run_command(check_rc=True) and get_bin_path(required=True) call node_steps' own fail_json: the step fails
    # with their result, and the call goes on (it did not exit).
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    done = node_steps.run_step(MODULE_SOURCE, "x", {"n": 1, "cmd": ["false"]}, call)
    assert done["failed"] is True and done["rc"] == 1 and done["cmd"] == "false"
    missing = node_steps.run_step(MODULE_SOURCE, "x", {"n": 1, "tool": "no-such-tool-ds41f"}, call)
    assert missing["failed"] is True and "no-such-tool-ds41f" in missing["msg"]
    assert call.step_running is False
    assert node_steps.run_step(MODULE_SOURCE, "x", {"n": 1}, call)["n"] == 2


def test_a_crash_or_a_module_without_a_spec_is_a_failed_step(call):
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    crashed = node_steps.run_step("raise RuntimeError('boom')", "x", {}, call)
    assert crashed["failed"] and crashed["msg"] == "x raised: RuntimeError: boom" and "Traceback" in crashed[
        "exception"]
    old = node_steps.run_step("from ansible.module_utils.basic import AnsibleModule\n", "x", {}, call)
    assert old["failed"] and "x has no MODULE_SPEC" in old["msg"]
    silent = node_steps.run_step("MODULE_SPEC = {'argument_spec': {}, 'supports_check_mode': True}\n"
                                 "def run(module):\n    pass\n", "x", {}, call)
    assert silent["failed"] and silent["msg"] == "x returned nothing (it never called exit_json or fail_json)"
    refused = node_steps.run_step("MODULE_SPEC = {'argument_spec': {}}\ndef run(module):\n    module.exit_json()\n",
                                  "x", {}, call)
    assert refused["skipped"] and "does not support check mode" in refused["msg"]
