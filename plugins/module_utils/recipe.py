# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Controller-side checks of the recipe (group_vars and site overrides) against the roles' argument specs.

Ansible's own role argument validation coerces: ``"false"`` passes as a bool, yet ``when: var`` on the
string is truthy or an error. Here a value must already have the declared type, so a quoted boolean or
number is caught on the controller, before any host is touched, with the variable and the spec named.
Beside ``type``, an option's description may declare, as one item of its list (so ``ansible-doc`` shows it and
ansible-lint's schema for argument specs still holds):

- ``Range: 1 to 65535.`` / ``Range: at least 1.`` / ``Range: above 0.`` / ``Range: above 0, at most 1.``;
- ``At least 1 element.`` (a list that must name something);
- ``Pin: C(<regular expression>), <what it is>.`` - the whole value (of a list, each element) must match;
  ``Empty means unset.`` after it lets ``""`` through (a pin still to be written);
- ``Size: Docker.`` / ``Size: systemd.`` (``Empty means unset.`` may follow) and ``Name.``: the forms of
  ``recipe_forms``, a size with its unit and a name clients, paths and labels can carry;
- ``Form: <form>.`` (``Empty means unset.`` may follow): the syntax of the value's destination, one of
  ``forms.FORMS`` (a unit name, a time span, a path under a root, sshd settings, engine flags, ...).

Every string in a value, keys included, is refused if it holds a control character. An option with
``no_log: true`` (a secret) is checked the same way, but no message shows its value.

An option of type ``dict``, or ``list`` of ``dict`` elements, may declare ``options`` of its own: each key present is
checked against its sub-spec the same way (``host_baseline_protected_services[1].memory_min``).

Cross-field rules that no single spec can express (context against the shape, guard thresholds, distinct
listener ports) live in ``cross_checks``.
"""

from __future__ import annotations

import os
import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import (
    args,
    firewall,
    forms,
    image_source,
    nccl,
    recipe_forms,
)
from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import lockout, systemd
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
        specs[role] = _with_declared(main.get("options") or {})
    return specs


def _with_declared(options):
    """Each option with what its description declares, its own sub-options included."""
    out = {}
    for name, spec in options.items():
        out[name] = dict(spec, **declared(spec))
        if isinstance(spec.get("options"), dict):
            out[name]["options"] = _with_declared(spec["options"])
    return out


_RANGE = re.compile(r"Range: (?:(?P<low>-?[0-9.]+) to (?P<high>-?[0-9.]+)|at least (?P<min>-?[0-9.]+)|"
                    r"above (?P<above>-?[0-9.]+)(?:, at most (?P<most>-?[0-9.]+))?)\.")
_ITEMS = re.compile(r"At least (?P<n>[0-9]+) elements?\.")
_PIN = re.compile(r"Pin: C\((?P<pattern>.+)\), (?P<what>.+?)\.(?P<empty> Empty means unset\.)?")
_SIZE = re.compile(r"Size: (?P<form>%s)\.(?P<empty> Empty means unset\.)?" % "|".join(recipe_forms.SIZES))


def _num(text):
    return float(text) if "." in text else int(text)


def declared(spec):
    """The range, element count or pin an option's description declares (see the module docstring)."""
    text = spec.get("description") or []
    out = {}
    for line in [text] if isinstance(text, str) else text:
        match = _RANGE.fullmatch(line)
        if match:
            g = match.groupdict()
            if g["low"] is not None:
                out.update(minimum=_num(g["low"]), maximum=_num(g["high"]))
            elif g["min"] is not None:
                out["minimum"] = _num(g["min"])
            else:
                out["exclusive_minimum"] = _num(g["above"])
                if g["most"] is not None:
                    out["maximum"] = _num(g["most"])
        match = _ITEMS.fullmatch(line)
        if match:
            out["min_items"] = int(match.group("n"))
        match = _PIN.fullmatch(line)
        if match:
            out.update(pattern=match.group("pattern"), pattern_what=match.group("what"),
                       allow_empty=bool(match.group("empty")))
        match = _SIZE.fullmatch(line)
        if match:
            out.update(size=match.group("form"), allow_empty=bool(match.group("empty")))
        if line == "Name.":
            out["name"] = True
        form = forms.parse(line)
        if form:
            out.update(form=form[0], form_arg=form[1], allow_empty=form[2])
    return out


def has_form(spec):
    """Whether an option declares the form of its destination: a boolean, a number with its range, choices, a
    pin, a size, a name or a Form line; a mapping or list of mappings through its sub-options instead."""
    kind = spec.get("type", "str")
    if kind == "bool" or spec.get("choices") is not None:
        return True
    if kind in ("int", "float"):
        return any(k in spec for k in ("minimum", "maximum", "exclusive_minimum"))
    if any(k in spec for k in ("pattern", "size", "name", "form")):
        return True
    options = spec.get("options")
    return isinstance(options, dict) and bool(options) and all(has_form(s) for s in options.values())


def _type_ok(value, kind):
    allowed = _STRICT.get(kind)
    if allowed is None:  # raw, or a type we do not check strictly
        return True
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, allowed)


SECRET = "(a secret, not shown)"


def shown(value, spec):
    """How a message shows a value: repr, or nothing of it where the option is a secret (no_log)."""
    return SECRET if spec.get("no_log") else repr(value)


def _describe(value, spec):
    if spec.get("no_log"):
        return "of type %s %s" % (type(value).__name__, SECRET)
    if isinstance(value, str):
        return "the string %r" % value
    return "%r (%s)" % (value, type(value).__name__)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _range_text(spec):
    low = ("above %s" % spec["exclusive_minimum"]) if "exclusive_minimum" in spec else (
        ("at least %s" % spec["minimum"]) if "minimum" in spec else None)
    high = ("at most %s" % spec["maximum"]) if "maximum" in spec else None
    if "minimum" in spec and "maximum" in spec:
        return "from %s to %s" % (spec["minimum"], spec["maximum"])
    return " and ".join(t for t in (low, high) if t)


def check_range(name, value, spec, where, origin=None):
    """Problems with a number against minimum / exclusive_minimum / maximum of its spec."""
    if not _number(value):
        return []
    low_ok = value > spec["exclusive_minimum"] if "exclusive_minimum" in spec else value >= spec.get("minimum", value)
    if low_ok and value <= spec.get("maximum", value):
        return []
    return [Problem(name, "%s is out of range: %s declares %s%s." % (
        shown(value, spec), where, _range_text(spec), " (value from %s)" % origin if origin else ""),
        "set %s to a number %s." % (name, _range_text(spec)))]


def check_pin(name, value, spec, where, origin=None):
    """Problems with a string, or each string of a list, against the spec's pattern (the whole value must match)."""
    if isinstance(value, (list, tuple)) and "pattern" in spec:
        return [p for i, item in enumerate(value) for p in check_pin("%s[%d]" % (name, i), item, spec, where, origin)]
    if not isinstance(value, str) or "pattern" not in spec:
        return []
    if value == "" and spec.get("allow_empty"):
        return []
    if re.fullmatch(spec["pattern"], value):
        return []
    what = spec.get("pattern_what", "a value matching %s" % spec["pattern"])
    return [Problem(name, "%s is not %s (%s; value from %s)." % (shown(value, spec), what, where,
                                                             origin or "the recipe"),
                    "set %s to %s where that value is written." % (name, what))]


def check_value(name, value, spec, where, origin=None, values=None):
    """Problems with one variable's value against its spec (type, choices, list elements, range, pin, form);
    ``values``: every variable, for forms that read another (the engine, the site's nodes)."""
    problems = []
    kind = spec.get("type", "str")
    if not _type_ok(value, kind):
        if "size" in spec and not spec.get("no_log"):  # an unquoted number: say what the size needs
            return check_form(name, value, spec, where, origin)
        if kind == "bool":
            fix = ("write %s: true or %s: false without quotes in YAML; on the command line -e key=value is "
                   "always a string, so use -e '{\"%s\": true}'." % (name, name, name))
        elif kind in ("int", "float"):
            fix = "write the number without quotes (on the command line: -e '{\"%s\": 16}')." % name
            if "." in name or "[" in name:  # a key of a mapping: -e gives the whole mapping
                fix = "write the number without quotes (on the command line, give the whole mapping as JSON)."
        elif kind in ("str", "path") and isinstance(value, (int, float)) and not isinstance(value, bool):
            fix = ("quote it: YAML reads unquoted digits as a number (on the command line: -e '{\"%s\": "
                   "\"...\"}')." % name)
        else:
            fix = "give %s a %s value." % (name, kind)
        problems.append(Problem(name, "is %s, but %s declares type %s." % (_describe(value, spec), where, kind),
                                fix))
        return problems
    controls = forms.control(value)
    if controls:
        return [Problem(name + suffix, "holds %s (character %d): wherever it lands (a unit line, a script, a "
                        "config file, a command) it would end the line there or carry a byte the reader takes as "
                        "syntax (refused in every string of every variable; value from %s)." % (
                            what, position + 1, origin or "the recipe"),
                        "remove it: write the value on one line of printable characters.")
                for suffix, position, what in controls]
    choices = spec.get("choices")
    if choices is not None and kind != "list" and value not in choices:
        problems.append(Problem(name, "%s is not one of %s (%s)." % (shown(value, spec), ", ".join(map(str, choices)),
                                                                    where),
                                "use one of: %s." % ", ".join(map(str, choices))))
    if kind == "list" and "elements" in spec:
        for i, item in enumerate(value):
            if not _type_ok(item, spec["elements"]):
                problems.append(Problem("%s[%d]" % (name, i), "is %s; %s declares %s elements." % (
                    _describe(item, spec), where, spec["elements"]), "write each element as a %s." % spec["elements"]))
            elif choices is not None and item not in choices:
                problems.append(Problem("%s[%d]" % (name, i),
                                        "%r is not one of %s." % (item, ", ".join(map(str, choices))),
                                        "use one of: %s." % ", ".join(map(str, choices))))
            elif isinstance(item, str) and spec["elements"] == "str" and not item.strip():
                problems.append(Problem("%s[%d]" % (name, i), "is an empty string.", "name something or remove it."))
    if kind in ("list", "dict") and len(value) < spec.get("min_items", 0):
        problems.append(Problem(name, "is empty, but %s needs at least %d %s%s." % (
            where, spec["min_items"], "element" if kind == "list" else "key",
            " (value from %s)" % origin if origin else ""), "list what it must name."))
    problems.extend(check_range(name, value, spec, where, origin))
    problems.extend(check_pin(name, value, spec, where, origin))
    problems.extend(check_form(name, value, spec, where, origin, values))
    problems.extend(check_options(name, value, spec, where, origin, values))
    return problems


def check_form(name, value, spec, where, origin=None, values=None):
    """Problems with a declared size (its unit), name (its character set) or form (its destination's syntax)."""
    problems = []
    if "form" in spec and not (value == "" and spec.get("allow_empty")):
        for suffix, item, reason, fix in forms.check(spec["form"], spec.get("form_arg"), value, values or {}):
            problems.append(Problem(name + suffix, "%s%s (%s declares Form: %s, read by %s; value from %s)." % (
                "" if item is None else shown(item, spec) + " ", reason[:-1] if reason.endswith(".") else reason,
                where, spec["form"] + (" " + spec["form_arg"] if spec.get("form_arg") else ""),
                forms.reader(spec["form"]), origin or "the recipe"), fix))
    if "size" in spec and not (value == "" and spec.get("allow_empty")):
        bad = recipe_forms.size_problem(value, spec["size"])
        if bad:
            problems.append(Problem(name, "%s (%s declares a %s size; value from %s)" % (
                bad[0][:-1], where, spec["size"], origin or "the recipe") + ".", bad[1]))
    if spec.get("name"):
        if isinstance(value, str):
            items = [(name, value)]
        elif isinstance(value, (list, tuple)):
            items = [("%s[%d]" % (name, i), item) for i, item in enumerate(value)]
        else:
            items = [("%s[%r]" % (name, key), key) for key in (value if isinstance(value, dict) else {})]
        for field, item in items:
            bad = recipe_forms.name_problem(item)
            if bad:
                problems.append(Problem(field, bad[0], bad[1]))
    return problems


def check_options(name, value, spec, where, origin=None, values=None):
    """A dict's, or each dict element's, keys against the option's own sub-options."""
    options = spec.get("options")
    if not isinstance(options, dict):
        return []
    if isinstance(value, dict):
        items = [(name, value)]
    elif isinstance(value, (list, tuple)):
        items = [("%s[%d]" % (name, i), item) for i, item in enumerate(value) if isinstance(item, dict)]
    else:
        return []
    problems = []
    for prefix, item in items:
        for key, sub in options.items():
            if key in item:
                problems.extend(check_value("%s.%s" % (prefix, key), item[key], sub, where, origin, values))
    return problems


def check_vars(values, specs, origins=None):
    """Check every defined variable that some role declares. ``values``: {name: value}; ``origins``:
    {name: where the value is written}, for the messages."""
    problems = []
    origins = origins or {}
    for role, options in specs.items():
        for name, spec in options.items():
            if name in values:
                problems.extend(check_value(name, values[name], spec,
                                            "roles/%s/meta/argument_specs.yml" % role, origins.get(name), values))
    return problems


# Every TCP port a stage opens on a node, with the variable that sets it (a dotted name is a key of a dict).
LISTENERS = ("serve_port", "serve_engine_port", "serve_master_port", "model_share_port", "image_share_port",
             "host_baseline_health.ssh_port")


def _lookup(values, dotted):
    head, _, key = dotted.partition(".")
    value = values.get(head)
    if key:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def port_checks(values):
    """Every listener port in 1-65535, and no two listeners on one port."""
    problems, seen = [], {}
    for name in LISTENERS:
        port = _lookup(values, name)
        if port is None:
            continue
        if not (isinstance(port, int) and not isinstance(port, bool)) or not 1 <= port <= 65535:
            continue  # its spec's range names it
        if port in seen:
            problems.append(Problem(name, "port %d is also %s: two listeners cannot share a port." % (port, seen[port]),
                                    "give %s a port no other listener uses (%s)." % (
                                        name, ", ".join("%s=%d" % (v, k) for k, v in sorted(seen.items())))))
        else:
            seen[port] = name
    return problems


def guard_gib(shapes, shape_name, startup, steady):
    """The memory guard's (startup, steady) GiB for a shape: its serve_guard_shapes entry over the recipe's two
    values. The one place they are resolved: the serve stage installs them, the doctor compares with them."""
    per_shape = (shapes or {}).get(shape_name)
    if isinstance(per_shape, dict):
        return per_shape.get("startup_gib", startup), per_shape.get("steady_gib", steady)
    return startup, steady


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
    start, steady = guard_gib(values.get("serve_guard_shapes"), shape.name, values.get("serve_guard_startup_gib"),
                              values.get("serve_guard_steady_gib"))
    per_shape = (values.get("serve_guard_shapes") or {}).get(shape.name)
    guard_field = "serve_guard_shapes.%s" % shape.name if isinstance(per_shape, dict) else "serve_guard_startup_gib"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, steady)) and start <= steady:
        problems.append(Problem(guard_field, "%s GiB is not above the steady guard (%s GiB)." % (
            start, steady), "the startup guard must exceed the steady one, e.g. 5 and 3."))
    for name in ("startup_gib", "steady_gib"):
        value = per_shape.get(name) if isinstance(per_shape, dict) else None
        if value is not None and (not _number(value) or value <= 0):
            problems.append(Problem("%s.%s" % (guard_field, name), "%r is not a positive number of GiB." % (value,),
                                    "write a number above 0, e.g. 5 (startup) and 3 (steady)."))
    problems.extend(port_checks(values))
    problems.extend(Problem(field, "%r %s" % (unit, reason), fix)
                    for field, unit, reason, fix in lockout.problems(values))
    for name in sorted(n for n in values if n.startswith("host_baseline_sysctl_")):
        problem = args.sysctl_values(values[name] if isinstance(values[name], dict) else {}, name)
        if problem:
            field, _, rest = problem.partition(": ")
            message, _, fix = rest.partition(" Fix: ")
            problems.append(Problem(field, message, fix))
    problems.extend(nccl.problems(shape.fabric, values))  # fabric stage: NCCL profile against shape and build
    problems.extend(image_source.problems(values))  # image stage: build or adopt, never both
    problems.extend(model_source_problems(cluster, values))
    problems.extend(model_scrub_problems(values))
    problems.extend(boot_marker_problems(values))
    problems.extend(Problem(*p) for p in firewall.problems(values))  # the firewall's and the API's addresses
    return problems


def model_source_problems(cluster, values):
    """The model stage's source: with source controller, the controller's folder (that the source node is one of
    the site's is its form, node name)."""
    problems = []
    if values.get("model_source") == "controller" and not values.get("model_controller_dir"):
        problems.append(Problem("model_controller_dir", "model_source is controller, but no folder is named.",
                                "set model_controller_dir to the checkpoint's folder on the controller."))
    return problems


# The scrub's timer looks every hour whether a scrub is due (roles/model/templates/ds41f-model-scrub.timer.j2).
SCRUB_LOOK_S = 3600
SCRUB_SPANS = ("model_scrub_period", "model_scrub_timeout")


def model_scrub_problems(values):
    """The checkpoint scrub's period against its timer's hourly look and its own time budget (each span's form is
    checked on its own; a span that is not one is left to that check)."""
    spans = {}
    for name in SCRUB_SPANS:
        try:
            spans[name] = systemd.parse_span(values[name]) / 1e6 if isinstance(values.get(name), str) else None
        except ValueError:
            spans[name] = None
    period, timeout = spans["model_scrub_period"], spans["model_scrub_timeout"]
    if period is None or period == float("inf"):
        return []
    if period < SCRUB_LOOK_S:
        return [Problem("model_scrub_period", "%r is shorter than an hour: the scrub's timer looks whether one is due "
                        "every hour, and a scrub reads the whole checkpoint." % values["model_scrub_period"],
                        "write 1h or more, e.g. 1w (the default) or 3d.")]
    if timeout is not None and timeout >= period:
        return [Problem("model_scrub_timeout", "%r is not shorter than model_scrub_period (%r): a scrub allowed a "
                        "whole period would leave the disk no rest between scrubs." % (
                            values["model_scrub_timeout"], values["model_scrub_period"]),
                        "give the scrub less time than its period, e.g. 6h for 1w, or lengthen the period.")]
    return []


def boot_marker_problems(values):
    """The serve stage judges a start by its release's boot-log lines: the release must declare them."""
    release, markers = values.get("ds41f_release"), values.get("serve_boot_markers")
    if isinstance(release, str) and isinstance(markers, dict) and release not in markers:
        return [Problem("serve_boot_markers", "has no entry for release %s (it has %s)." % (
            release, ", ".join(sorted(markers)) or "none"), "declare that release's required and forbidden boot-log "
            "lines under serve_boot_markers.%s." % release)]
    return []
