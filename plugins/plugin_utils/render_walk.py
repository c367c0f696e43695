# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Where each variable lands: every Jinja expression in the roles' templates, tasks, handlers and vars.

``uses(root)`` parses them all (Jinja's own parser, nothing rendered) and returns one ``Use`` per variable an
expression reads: the variable, the key it reads of a mapping (``host_baseline_health.interval``), where the
expression is (a template, or a task file and the argument), the node file a template is written to when a task
or role var names it, and whether the template is a shell script and the expression passes through ``quote``.
The validation names the destination in its messages from this (only when it has something to say), and
tests/unit/validation/test_forms_walk.py holds every rendered variable to a declared form with it.
"""

from __future__ import annotations

import functools
import os
from collections import namedtuple

import yaml
from jinja2 import Environment, nodes

Use = namedtuple("Use", "name key where dest script quoted condition")
# Task keys whose strings are bare expressions (Ansible adds the braces).
CONDITIONS = ("when", "changed_when", "failed_when", "until", "that")


class _Any(dict):
    """Every filter and test name is known: the walk parses, it never renders, and Ansible's plugins are not here."""

    def __missing__(self, name):
        return str

    def get(self, name, default=None):
        return self[name]


_ENV = Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
_ENV.filters, _ENV.tests = _Any(_ENV.filters), _Any(_ENV.tests)


def _free(ast):
    """Names a template reads that it does not set itself ({% set %}, loop targets, macro parameters)."""
    names = list(ast.find_all(nodes.Name))
    local = {n.name for n in names if n.ctx in ("store", "param")}
    return {n.name for n in names if n.ctx == "load"} - local - {"loop", "super", "caller", "varargs", "kwargs"}


def _references(ast, within=None, free=None):
    """(name, key or None) of every variable a template reads (locals of {% set %} and loops are not variables),
    in the whole template or only ``within`` one of its nodes (``free``: the template's free names, when known);
    ``key`` where it reads one key of a mapping (``.key`` or ``['key']``, not a method such as ``.items()``)."""
    free = _free(ast) if free is None else free
    out = set()

    def visit(node, parent, grandparent=None):
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name in free:
            key = None
            method = isinstance(grandparent, nodes.Call) and grandparent.node is parent
            if isinstance(parent, nodes.Getattr) and parent.node is node and not method:
                key = parent.attr
            elif (isinstance(parent, nodes.Getitem) and parent.node is node and isinstance(parent.arg, nodes.Const)
                  and isinstance(parent.arg.value, str)):
                key = parent.arg.value
            out.add((node.name, key))
        for child in node.iter_child_nodes():
            visit(child, node, parent)

    visit(ast if within is None else within, None)
    return sorted(out, key=lambda item: (item[0], item[1] or ""))


def _quoted(expr):
    """Whether an output expression ends in the quote filter (shell-safe as one word)."""
    return isinstance(expr, nodes.Filter) and expr.name == "quote"


def _template_uses(path, where, dest):
    with open(path) as handle:
        text = handle.read()
    ast = _ENV.parse(text)
    script = path.endswith(".sh.j2") or text.startswith("#!")
    out, free = [], _free(ast)
    for output in ast.find_all(nodes.Output):
        for expr in output.nodes:
            if isinstance(expr, nodes.TemplateData):
                continue
            for name, key in _references(ast, expr, free):
                out.append(Use(name, key, where, dest, script, _quoted(expr), False))
    # Names read by {% if %}, {% for %} and {% set %} only: they shape the text, so they count too.
    seen = {(u.name, u.key) for u in out}
    for name, key in _references(ast, None, free):
        if (name, key) not in seen:
            out.append(Use(name, key, where, dest, script, True, False))
    return out


def _strings(node, path):
    """(key path, string) of every string in parsed YAML."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, path + [str(key)])
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, path + [str(i)])
    elif isinstance(node, str):
        yield path, node


def _destinations(data, out):
    """{template file: node path} from every mapping with template+path (managed_files) or src+dest."""
    if isinstance(data, dict):
        template = data.get("template") if isinstance(data.get("template"), str) else data.get("src")
        target = data.get("path") or data.get("dest")
        if isinstance(template, str) and template.endswith(".j2") and isinstance(target, str):
            out[template] = target
        for value in data.values():
            _destinations(value, out)
    elif isinstance(data, list):
        for value in data:
            _destinations(value, out)


def _load(path):
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _yaml_uses(data, where):
    out = []
    for keys, text in _strings(data, []):
        last = keys[-1] if keys else ""
        condition = last in CONDITIONS or (len(keys) > 1 and keys[-2] in CONDITIONS and last.isdigit())
        if not condition and "{{" not in text and "{%" not in text:
            continue
        source = "{{ %s }}" % text if condition and "{{" not in text else text
        try:
            ast = _ENV.parse(source)
        except Exception:  # noqa: BLE001 - Ansible's own syntax Jinja does not know: not a variable read
            continue
        at = "%s (%s)" % (where, ".".join(keys))
        out += [Use(name, key, at, None, False, True, condition) for name, key in _references(ast)]
    return out


def locals_of(root):
    """Names the roles define for themselves: task and block vars, loop variables, include vars."""
    out = set()
    for top, _, files in os.walk(os.path.join(root, "roles")):
        for name in files:
            if name.endswith((".yml", ".yaml")) and "meta" not in top.split(os.sep):
                _collect_locals(_load(os.path.join(top, name)), out)
    return out


def _collect_locals(node, out):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "vars" and isinstance(value, dict):
                out.update(value)
            elif key == "loop_control" and isinstance(value, dict) and isinstance(value.get("loop_var"), str):
                out.add(value["loop_var"])
            _collect_locals(value, out)
    elif isinstance(node, list):
        for value in node:
            _collect_locals(value, out)


def _resolve(dest, role_vars):
    """A destination with ``{{ name }}`` of a plain role var filled in (``{{ _kernel_memory_script }}``)."""
    for name, value in role_vars.items():
        if isinstance(value, str) and "{{" not in value:
            dest = dest.replace("{{ %s }}" % name, value)
    return dest


@functools.lru_cache(maxsize=4)
def uses(root):
    """Every Use in roles/*/templates, tasks, handlers and vars."""
    out, dests, role_vars = [], {}, {}
    roles = os.path.join(root, "roles")
    for role in sorted(os.listdir(roles)):
        for kind in ("tasks", "handlers", "vars"):
            folder = os.path.join(roles, role, kind)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                if name.endswith((".yml", ".yaml")):
                    data = _load(os.path.join(folder, name))
                    _destinations(data, dests)
                    if kind == "vars" and isinstance(data, dict):
                        role_vars.update(data)
                    out += _yaml_uses(data, "roles/%s/%s/%s" % (role, kind, name))
        folder = os.path.join(roles, role, "templates")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            out += _template_uses(os.path.join(folder, name), "roles/%s/templates/%s" % (role, name),
                                  _resolve(dests[name], role_vars) if name in dests else None)
    return out


def destination(root, field):
    """Where a variable (the field's first part, and its key) lands, for a message: the node files its templates
    write, else the task arguments that render it; None when nothing of the roles renders it."""
    name = field.split(".", 1)[0].split("[", 1)[0]
    key = field[len(name) + 1:].split(".", 1)[0].split("[", 1)[0] if field[len(name):].startswith(".") else None
    places = _places(root, name, key, set())
    if not places:
        return None
    return "; ".join(places[:2]) + (" and %d more" % (len(places) - 2) if len(places) > 2 else "")


def _places(root, name, key, seen):
    """Templates (with their node file) that render ``name``, through the role vars built from it; else the task
    arguments that do."""
    seen.add(name)
    found = [u for u in uses(root) if u.name == name and not u.condition and (u.key is None or key is None
                                                                                  or u.key == key)]
    templates = ["%s (%s)" % (u.dest, u.where) if u.dest else u.where for u in found if "/templates/" in u.where]
    for use in found:  # a role var built from it: where that var lands
        if "/vars/" in use.where:
            var = use.where.split("(", 1)[1].split(".", 1)[0].rstrip(")")
            if var not in seen:
                templates += [p for p in _places(root, var, None, seen) if "/templates/" in p]
    return list(dict.fromkeys(templates or [u.where for u in found]))
