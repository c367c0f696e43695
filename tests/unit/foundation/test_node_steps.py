"""node_steps: several modules in one process on a node. Its payload must carry every step module's module_utils,
each step must behave as its module alone (check mode, diff, idempotence), and a failure must stop a converge
but not a check. The module runs here as Ansible runs it on a node: a real Python process fed its arguments."""

from __future__ import annotations

import ast
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
    sent = [dict(s, source=action.module_source(s["module"])) for s in steps]
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"steps": sent, "_ansible_check_mode": check_mode,
                                                          "_ansible_diff": diff}}))
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


def test_every_step_module_supports_check_mode():
    # node_steps passes its own check mode to every step: a step module without it would refuse the doctor.
    for name in action.STEP_MODULES:
        assert "supports_check_mode=True" in (MODULES / (name + ".py")).read_text(), name


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


def test_the_calls_own_log_line_names_the_modules_only(monkeypatch):
    from ansible.module_utils.testing import patch_module_args

    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    logged = []
    monkeypatch.setattr(node_steps.StepsModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    steps = [{"name": "Key", "module": "managed_files", "source": "SECRET SOURCE", "args": {"token": "s3cret"}}]
    with patch_module_args({"steps": steps}):
        node_steps.StepsModule(argument_spec={"steps": {"type": "list", "elements": "dict", "required": True}})
    assert logged == ["Invoked with steps=managed_files"]


MODULE_SOURCE = """
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"n": {"type": "int"}}, supports_check_mode=True)
try:  # a module's own broad except around its exit must not keep its result from the call
    module.exit_json(changed=module.check_mode, n=module.params["n"] + 1)
except Exception:
    pass
"""


def test_a_step_returns_what_its_module_exits_with_and_a_crash_is_a_failed_step():
    from ansible_collections.dgxspark.ds41f.plugins.modules import node_steps

    done = node_steps.run_step(MODULE_SOURCE, "x", {"n": 1}, {"_ansible_check_mode": True}, "legacy")
    assert done["n"] == 2 and done["changed"] is True and "invocation" not in done
    crashed = node_steps.run_step("raise RuntimeError('boom')", "x", {}, {}, "legacy")
    assert crashed["failed"] and crashed["msg"] == "x raised: RuntimeError: boom"
