# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Forms of whole mappings: JSON objects, sysctl settings, boot-log markers, per-release and per-shape tables,
docker run's mounts, devices and a shape's launch details. Each function returns [(suffix, item, reason, fix)],
``suffix`` appended to the variable's name (``.tp4-ring.cpuset``, ``[2]``).
"""

from __future__ import annotations

import math
import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import paths, words

_SYSCTL = re.compile(r"[a-z0-9_-]+(\.[A-Za-z0-9_*-]+)+")
MARKER_KEYS = ("required", "forbidden", "fallback", "kernel_families")
GUARD_KEYS = ("startup_gib", "steady_gib")
_CGROUP_RULE = re.compile(r"[abc] (\*|[0-9]+):(\*|[0-9]+) [rwm]{1,3}")
MOUNT_OPTIONS = frozenset(("ro", "rw", "z", "Z", "shared", "slave", "private", "rshared", "rslave", "rprivate",
                           "nocopy"))


def json_object(value):
    """A mapping that JSON carries as it is: string keys, finite numbers, no YAML-only types."""
    def bad(item, path):
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    return path, "has the key %r, which is not a string: JSON object keys are strings." % (key,)
                found = bad(sub, "%s.%s" % (path, key))
                if found:
                    return found
        elif isinstance(item, list):
            for i, sub in enumerate(item):
                found = bad(sub, "%s[%d]" % (path, i))
                if found:
                    return found
        elif isinstance(item, float) and not math.isfinite(item):
            return path, "is %r, which JSON has no number for." % item
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            return path, "is a %s, which JSON cannot carry." % type(item).__name__
        return None
    found = bad(value, "")
    if not found:
        return []
    return [(found[0], None, found[1], "write the value as JSON would (strings, numbers, true/false, lists and "
             "mappings), quoting dates and other YAML-only values.")]


def sysctl_settings(value):
    out = []
    for key in value:
        if not isinstance(key, str) or not _SYSCTL.fullmatch(key):
            out.append((".%s" % key, None, "is not a sysctl key (dotted lower-case words such as kernel.panic): the "
                        "sysctl.d line would set another key or none.", "write the key as sysctl -a prints it."))
    return out


def _regex(pattern):
    try:
        re.compile(pattern)
        return None
    except (re.error, TypeError) as exc:
        return "is not a regular expression Python compiles (%s)." % exc


def boot_markers(markers, prefix=""):
    """One release's markers: required and forbidden lists, a fallback and kernel families, each a regular
    expression."""
    out = []
    for key, item in markers.items():
        field = "%s.%s" % (prefix, key)
        if key not in MARKER_KEYS:
            out.append((field, None, "is not a marker key.", "use %s." % ", ".join(MARKER_KEYS)))
            continue
        if key in ("required", "forbidden"):
            items = [("%s[%d]" % (field, i), p) for i, p in enumerate(item if isinstance(item, list) else [item])]
        elif key == "kernel_families":
            items = [("%s.%s" % (field, k), p) for k, p in (item.items() if isinstance(item, dict) else [])]
        else:
            items = [(field, item)]
        for where, pattern in items:
            reason = _regex(pattern) if isinstance(pattern, str) else "is not a string."
            if reason:
                out.append((where, pattern, reason, "write a regular expression over one boot-log line (YAML "
                            "double quotes need \\\\ for a backslash)."))
    return out


def boot_markers_per_release(value):
    out = []
    for release, markers in value.items():
        if isinstance(markers, dict):
            out += boot_markers(markers, ".%s" % release)
        else:
            out.append((".%s" % release, None, "is not a mapping of %s." % ", ".join(MARKER_KEYS),
                        "write {required: [...], forbidden: [...]}."))
    return out


def flag_names_per_release(value):
    out = []
    for release, flags in value.items():
        if not isinstance(flags, list):
            out.append((".%s" % release, None, "is not a list of flag names.", "write [--flag, ...] or []."))
            continue
        for i, flag in enumerate(flags):
            bad = words.flag_name(flag)
            if bad:
                out.append((".%s[%d]" % (release, i), flag) + bad)
    return out


def _not_a_shape(shape, what):
    return (".%s" % shape, None, "is not a shape, so its %s would never apply." % what,
            "use one of %s." % ", ".join(topology.SHAPES))


def guards_per_shape(value):
    out = []
    for shape, guards in value.items():
        if shape not in topology.SHAPES:
            out.append(_not_a_shape(shape, "guards"))
        elif not isinstance(guards, dict) or set(guards) - set(GUARD_KEYS):
            out.append((".%s" % shape, None, "is not a mapping of %s." % " and ".join(GUARD_KEYS),
                        "write {startup_gib: 5, steady_gib: 3}."))
    return out


def _node_path(path, root, what, extra=""):
    bad = paths.syntax_problem(path, extra) or (None if paths.under(path, root) else (
        "lies outside %s, where %s lie." % (root, what), "name a path under %s." % root))
    return bad


def shape_launch(value):
    out = []
    for shape, launch in value.items():
        if shape not in topology.SHAPES:
            out.append(_not_a_shape(shape, "launch details"))
            continue
        if not isinstance(launch, dict):
            continue  # launch.shape_launch names it
        if "cpuset" in launch:
            bad = words.cpus(launch["cpuset"])
            if bad:
                out.append((".%s.cpuset" % shape, launch["cpuset"]) + bad)
        for i, bind in enumerate(launch.get("device_binds") or []):
            for key in ("source", "target"):
                item = bind.get(key) if isinstance(bind, dict) else None
                bad = _node_path(item, "/dev", "devices", ":") if isinstance(item, str) else None
                if bad:
                    out.append((".%s.device_binds[%d].%s" % (shape, i, key), item) + bad)
        for i, rule in enumerate(launch.get("device_cgroup_rules") or []):
            if not isinstance(rule, str) or not _CGROUP_RULE.fullmatch(rule):
                out.append((".%s.device_cgroup_rules[%d]" % (shape, i), rule, "is not a device cgroup rule "
                            "(type major:minor access).", "write e.g. \"c 226:* rw\"."))
    return out


def bind_mount(value):
    parts = value.split(":") if isinstance(value, str) else []
    if len(parts) not in (2, 3) or (len(parts) == 3 and not set(parts[2].split(",")) <= MOUNT_OPTIONS):
        return ("is not src:dst[:options] with options among %s." % ", ".join(sorted(MOUNT_OPTIONS)),
                "write e.g. /var/cache/ds41f/spark-ds41f:/cache/spark-ds41f:rw.")
    source, target = parts[:2]
    return (paths.syntax_problem(source) or paths.system_problem(source, "hand the container")
            or paths.syntax_problem(target) or _covers_a_tree(target))


def _covers_a_tree(target):
    """Inside the container a mount may sit below a system tree (SGLang's cache at /root/.cache), never over one
    whole: the image's own /usr or /etc would be gone."""
    if target.rstrip("/") in ("",) + tuple(t.rstrip("/") for t in paths.SYSTEM_TREES):
        return ("covers %s inside the container: the image's own files there would be gone." % (target or "/"),
                "mount below it, at a folder of its own (e.g. /cache).")
    return None


def device(value):
    parts = value.split(":") if isinstance(value, str) else []
    if not 1 <= len(parts) <= 3 or (len(parts) == 3 and not re.fullmatch(r"[rwm]{1,3}", parts[2])):
        return ("is not host[:container[:permissions]] with permissions of r, w and m.",
                "write e.g. /dev/infiniband:/dev/infiniband:rwm.")
    for path in parts[:2]:
        bad = _node_path(path, "/dev", "devices")
        if bad:
            return bad
    return None
