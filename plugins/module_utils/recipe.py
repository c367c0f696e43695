# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Controller-side checks of the recipe (group_vars and site overrides) against the roles' argument specs.

Ansible's own role argument validation coerces: ``"false"`` passes as a bool, yet ``when: var`` on the
string is truthy or an error. Here a value must already have the declared type, so a quoted boolean or
number is caught on the controller, before any host is touched, with the variable and the spec named.
Cross-field rules that no single spec can express (context against the shape, guard thresholds) live in
``cross_checks``.
"""

from __future__ import annotations

import os

from ansible_collections.dgxspark.ds41f.plugins.module_utils import nccl
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

_STRICT = {
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "list": (list, tuple),
    "dict": (dict,),
    "path": (str,),
}


def load_role_specs(roles_dir, yaml_load):
    """{role: {option: spec}} from every roles/<role>/meta/argument_specs.yml (entry point 'main')."""
    specs = {}
    for role in sorted(os.listdir(roles_dir)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            data = yaml_load(handle) or {}
        main = (data.get("argument_specs") or {}).get("main") or {}
        specs[role] = main.get("options") or {}
    return specs


def _type_ok(value, kind):
    allowed = _STRICT.get(kind)
    if allowed is None:  # raw, or a type we do not check strictly
        return True
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, allowed)


def _describe(value):
    if isinstance(value, str):
        return "the string %r" % value
    return "%r (%s)" % (value, type(value).__name__)


def check_value(name, value, spec, where):
    """Problems with one variable's value against its spec (type, choices, list elements)."""
    problems = []
    kind = spec.get("type", "str")
    if not _type_ok(value, kind):
        if kind == "bool":
            fix = ("write %s: true or %s: false without quotes in YAML; on the command line -e key=value is "
                   "always a string, so use -e '{\"%s\": true}'." % (name, name, name))
        elif kind in ("int", "float"):
            fix = "write the number without quotes (on the command line: -e '{\"%s\": 16}')." % name
        else:
            fix = "give %s a %s value." % (name, kind)
        problems.append(Problem(name, "is %s, but %s declares type %s." % (_describe(value), where, kind), fix))
        return problems
    choices = spec.get("choices")
    if choices is not None and kind != "list" and value not in choices:
        problems.append(Problem(name, "%r is not one of %s (%s)." % (value, ", ".join(map(str, choices)), where),
                                "use one of: %s." % ", ".join(map(str, choices))))
    if kind == "list" and "elements" in spec:
        for i, item in enumerate(value):
            if not _type_ok(item, spec["elements"]):
                problems.append(Problem("%s[%d]" % (name, i), "is %s; %s declares %s elements." % (
                    _describe(item), where, spec["elements"]), "write each element as a %s." % spec["elements"]))
            elif choices is not None and item not in choices:
                problems.append(Problem("%s[%d]" % (name, i),
                                        "%r is not one of %s." % (item, ", ".join(map(str, choices))),
                                        "use one of: %s." % ", ".join(map(str, choices))))
    return problems


def check_vars(values, specs):
    """Check every defined variable that some role declares. ``values``: {name: value}."""
    problems = []
    for role, options in specs.items():
        for name, spec in options.items():
            if name in values:
                problems.extend(check_value(name, values[name], spec,
                                            "roles/%s/meta/argument_specs.yml" % role))
    return problems


def cross_checks(cluster, values):
    """Rules that span variables and the shape."""
    problems = []
    shape = cluster.shape
    context = values.get("serve_max_model_len")
    if isinstance(context, int) and not isinstance(context, bool) and context > shape.context:
        if shape.page_size == 4096:
            fix = "lower it to %d, or move to %s (64 KiB kernel and memory saver)." % (shape.context, shape.name[:-3])
        else:
            fix = "lower it to at most %d." % shape.context
        problems.append(Problem("serve_max_model_len", "%d tokens exceeds what %s holds (%d)." % (
            context, shape.name, shape.context), fix))
    start, steady = values.get("serve_guard_startup_gib"), values.get("serve_guard_steady_gib")
    guard_field = "serve_guard_startup_gib"
    per_shape = (values.get("serve_guard_shapes") or {}).get(shape.name)  # serve stage: this shape's guards
    if isinstance(per_shape, dict):
        start, steady = per_shape.get("startup_gib", start), per_shape.get("steady_gib", steady)
        guard_field = "serve_guard_shapes.%s" % shape.name
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, steady)) and start <= steady:
        problems.append(Problem(guard_field, "%s GiB is not above the steady guard (%s GiB)." % (
            start, steady), "the startup guard must exceed the steady one, e.g. 5 and 3."))
    problems.extend(nccl.problems(shape.fabric, values))  # fabric stage: NCCL profile against shape and build
    return problems
