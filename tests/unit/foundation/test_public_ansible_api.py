"""plugins/ uses ansible-core's public names only: a private one (basic._ANSIBLE_ARGS, a TaskResult's _result)
changes under us between ansible-core releases. The check reads every Python file under plugins/ and every
ansible-core name those files import, so a new file or a new import is checked as it lands."""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = ROOT / "plugins"

# The attributes of ActionBase, CallbackBase and LookupBase that plugins of that kind are written against: they are
# the plugin interfaces (ansible-core's developer guide shows them, and every action, callback and lookup plugin of
# ansible-core and of the collections it ships uses them); ansible-core gives them no public names.
PLUGIN_INTERFACE = {
    "action": {"_task", "_execute_module", "_connection", "_templar", "_loader", "_play_context",
               "_shared_loader_obj", "_find_needle", "_low_level_execute_command", "_remote_expand_user",
               "_transfer_data", "_fixup_perms2", "_make_tmp_path", "_remove_tmp_path", "_get_diff_data"},
    "callback": {"_display"},
    "lookup": {"_templar", "_loader"},
}

# Objects that ansible-core hands to plugins without the plugin importing their class: a private name of theirs is
# ansible-core's too.
HANDED = ("ansible.executor.task_result:CallbackTaskResult", "ansible.playbook.task:Task",
          "ansible.playbook.play:Play", "ansible.vars.manager:VariableManager", "ansible.inventory.host:Host",
          "ansible.module_utils.basic:AnsibleModule", "ansible.plugins.action:ActionBase")


def private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_core(module_name):
    return module_name == "ansible" or module_name.startswith("ansible.")


def core_names_of(obj):
    """The private names an ansible-core module or class (with its ansible-core bases) defines."""
    if inspect.ismodule(obj):
        return {n for n in dir(obj) if private(n)}
    names = set()
    for cls in inspect.getmro(obj) if inspect.isclass(obj) else ():
        if not is_core(cls.__module__):
            continue
        names.update(n for n in vars(cls) if private(n))
        with contextlib.suppress(OSError, TypeError):  # a class without source: its vars() above
            names.update(n for n in re.findall(r"self\.(_\w+)", inspect.getsource(cls)) if private(n))
    return names


def resolve(module_name, name=None):
    module = importlib.import_module(module_name)
    return getattr(module, name) if name else module


def plugin_files():
    return sorted(p for p in PLUGINS.rglob("*.py"))


class Imports:
    """The names a file binds by import: ansible-core ones (name -> object), and any other import."""

    def __init__(self, tree):
        self.core, self.other = {}, set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if is_core(node.module) and not private(alias.name):
                        self.core[bound] = resolve(node.module, alias.name)
                    else:
                        self.other.add(bound)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    if is_core(alias.name):
                        self.core[bound] = resolve(alias.name if alias.asname else bound)
                    else:
                        self.other.add(bound)


def own_names(trees):
    """The private names this collection defines: functions, classes, module and class level names, attributes
    assigned on self."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                    isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return {n for n in names if private(n)}


def core_names(imports_of_files):
    names = set()
    for imports in imports_of_files:
        for obj in imports.core.values():
            names |= core_names_of(obj)
    for spec in HANDED:
        names |= core_names_of(resolve(*spec.split(":")))
    return names


def named_private(node):
    """getattr(x, "_name") and its kin."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
        "getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 and isinstance(
        node.args[1], ast.Constant) and isinstance(node.args[1].value, str) and private(node.args[1].value)


def problems_in(path, tree, imports, own, core):
    """Every use of an ansible-core private name in one parsed file, as 'path:line: what'."""
    kind = path.parent.name if path.parent.parent == PLUGINS else None
    interface = PLUGIN_INTERFACE.get(kind, set())
    out = []

    def flag(node, what):
        out.append("%s:%d: %s" % (path.relative_to(ROOT), node.lineno, what))

    def receiver_ok(node, receiver, name, self_class):
        if name in interface:
            return True
        if isinstance(receiver, ast.Name) and receiver.id in imports.core:
            return False
        if isinstance(receiver, ast.Name) and receiver.id in imports.other:
            return True  # another library's (os._exit), or this collection's own module
        if isinstance(receiver, ast.Name) and receiver.id == "self" and self_class is not None and \
                not self_class:
            return True  # an instance of a class of ours that no ansible-core class is a base of
        return name in own and name not in core

    def visit(node, self_class):
        if isinstance(node, ast.ClassDef):
            bases = [b.id if isinstance(b, ast.Name) else None for b in node.bases]
            core_bases = [imports.core[b] for b in bases if b in imports.core]
            overridden = set().union(*(core_names_of(b) for b in core_bases)) if core_bases else set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in overridden:
                    flag(item, "overrides ansible-core's private %s" % item.name)
            for item in node.body:
                visit(item, bool(core_bases))
            return
        if isinstance(node, ast.ImportFrom) and node.module and is_core(node.module):
            if any(private(part) for part in node.module.split(".")):
                flag(node, "imports from ansible-core's private %s" % node.module)
            for alias in node.names:
                if private(alias.name):
                    flag(node, "imports ansible-core's private %s.%s" % (node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if is_core(alias.name) and any(private(part) for part in alias.name.split(".")):
                    flag(node, "imports ansible-core's private %s" % alias.name)
        elif isinstance(node, ast.Attribute) and private(node.attr):
            if not receiver_ok(node, node.value, node.attr, self_class):
                flag(node, "uses %s.%s" % (ast.unparse(node.value), node.attr))
        elif named_private(node) and not receiver_ok(node, node.args[0], node.args[1].value, self_class):
            flag(node, "uses %s(%s, %r)" % (node.func.id, ast.unparse(node.args[0]), node.args[1].value))
        for child in ast.iter_child_nodes(node):
            visit(child, self_class)

    visit(tree, None)
    return out


def check(sources):
    """{path: source} -> the problems, with own and core names taken from every file given."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    imports = {path: Imports(tree) for path, tree in trees.items()}
    own, core = own_names(trees.values()), core_names(imports.values())
    return [p for path, tree in trees.items() for p in problems_in(path, tree, imports[path], own, core)]


def test_plugins_use_no_private_ansible_core_name():
    files = plugin_files()
    assert len(files) > 50  # the whole tree, found by walking it
    assert check({path: path.read_text() for path in files}) == []


@pytest.mark.parametrize("snippet, found", [
    ("from ansible.module_utils import basic\nbasic._ANSIBLE_ARGS = b'{}'\n", "uses basic._ANSIBLE_ARGS"),
    ("from ansible.module_utils.basic import AnsibleModule\nAnsibleModule._record_module_result = print\n",
     "uses AnsibleModule._record_module_result"),
    ("from ansible.module_utils.basic import AnsibleModule\nclass M(AnsibleModule):\n"
     "    def _log_invocation(self):\n        pass\n", "overrides ansible-core's private _log_invocation"),
    ("def f(module):\n    return module._diff\n", "uses module._diff"),
    ("def f(result):\n    return result._result\n", "uses result._result"),
    ("def f(task):\n    return getattr(task, '_role', None)\n", "uses getattr(task, '_role')"),
    ("from ansible.module_utils.common.parameters import _list_no_log_values\n",
     "imports ansible-core's private ansible.module_utils.common.parameters._list_no_log_values"),
    ("from ansible.module_utils._internal import _traceback\n",
     "imports from ansible-core's private ansible.module_utils._internal"),
    ("from ansible.plugins.action import ActionBase\nclass A(ActionBase):\n    def run(self):\n"
     "        return self._low_level_execute_command, self._templar, self._supports_async\n",
     "uses self._supports_async"),
])
def test_the_check_finds_each_kind_of_private_use(snippet, found):
    problems = check({PLUGINS / "action" / "example.py": snippet})
    assert problems and problems[0].endswith(found), problems


def test_the_check_lets_own_names_and_other_libraries_through():
    snippet = ("import os\nfrom ansible.plugins.action import ActionBase\n"
               "class Mine:\n    def __init__(self):\n        self._lock = None\n"
               "    def go(self, other):\n        return self._lock, other._lock, os._exit\n"
               "class A(ActionBase):\n    def run(self):\n        self._stages = 1\n"
               "        return self._task, self._execute_module, self._stages\n")
    assert check({PLUGINS / "action" / "example.py": snippet}) == []
    # An action plugin's interface is not a module's: the same name elsewhere is ansible-core's private one.
    assert check({PLUGINS / "module_utils" / "example.py": "def f(action):\n    return action._templar\n"})
