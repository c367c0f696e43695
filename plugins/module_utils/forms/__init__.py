# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The form of each variable's destination, declared in its argument spec, and its check.

An option's description declares ``Form: <form>.`` as one item of its list (``Empty means unset.`` may follow):
the syntax of the place its value lands (a unit line, a script run as root, sshd's drop-in, an engine's parser).
``FORMS`` lists every form with what reads it; docs/site-file.md ("Forms") lists them for people. Beside the
declared form, every string anywhere in a value is refused if it holds a control character (``control``).

A check returns [(suffix, item, reason, fix)]: ``suffix`` extends the variable's name to the part that is wrong,
``item`` is that part's value (None when the reason names it), so the caller can leave a secret's value out.
"""

from __future__ import annotations

import re
import unicodedata

from ansible_collections.dgxspark.ds41f.plugins.module_utils import env_check, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import (
    engine_flags,
    lockout,
    paths,
    sshd,
    structured,
    systemd,
    words,
)

LINE = re.compile(r"Form: (?P<form>.+?)\.(?P<empty> Empty means unset\.)?")
_UNDER = re.compile(r"path under (?P<roots>/\S*(?:, /\S*)*)")
_OF = re.compile(r"engine config of (?P<flag>--[a-z0-9-]+)")
_AS = re.compile(r"as role (?P<role>[a-z_]+) declares it")
# Unicode categories no value needs: C0/C1 controls (newline, NUL, escape), format characters (bidirectional
# overrides, zero-width characters), surrogates, and the line and paragraph separators.
_CONTROL_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
# Unicode gives the C0 and C1 controls no name: these are the ones a value most often carries.
_CONTROL_NAMES = {"\n": "(a newline)", "\r": "(a carriage return)", "\t": "(a tab)", "\x00": "(a NUL byte)",
                  "\x1b": "(an escape)", "\x85": "(a next-line, NEL)"}


def control(value, path=""):
    """[(suffix, position, character name)] of every control character in every string of ``value``, keys too."""
    out = []
    if isinstance(value, str):
        if value.isprintable():  # the common case, in C: no control, format or separator character at all
            return out
        for i, char in enumerate(value):
            if unicodedata.category(char) in _CONTROL_CATEGORIES:
                out.append((path, i, "U+%04X %s" % (ord(char), _CONTROL_NAMES.get(char) or unicodedata.name(
                    char, "(a control character)"))))
                break
    elif isinstance(value, dict):
        for key, item in value.items():
            bad_key = isinstance(key, str) and control(key)
            field = "%s[%r]" % (path, key) if bad_key else "%s.%s" % (path, key)
            out += [(field, i, what) for _, i, what in bad_key or []]
            out += control(item, field)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            out += control(item, "%s[%d]" % (path, i))
    return out


def _each(check):
    """A one-word form applied to the value, or to each element of a list."""
    def run(value, values, arg):
        items = [("", value)] if not isinstance(value, (list, tuple)) else [
            ("[%d]" % i, item) for i, item in enumerate(value)]
        return [(suffix, item) + bad for suffix, item in items if isinstance(item, str)
                for bad in [check(item)] if bad]
    return run


def _path(*checks):
    def check(value):
        bad = paths.syntax_problem(value)
        for extra in checks:
            bad = bad or extra(value)
        return bad
    return _each(check)


def _under(value, values, arg):
    roots = [r.strip() for r in arg.split(",")]
    return _path(lambda v: paths.root_problem(v, roots))(value, values, arg)


def _controller_path(value):
    return None if value.strip() else ("is empty.", "name the path.")


def _node(value, values, arg):
    nodes = [n.get("name") for n in values.get("spark_nodes") or [] if isinstance(n, dict)]
    if not isinstance(value, str) or not nodes or value in nodes:
        return []
    close = [n for n in nodes if topology.skeleton(n) == topology.skeleton(value)]
    hint = "; it only looks like %s" % close[0] if close else ""
    return [("", value, "is not a node of this site (%s)%s." % (", ".join(nodes), hint),
             "name one of the site's nodes exactly as the site file writes it.")]


def _whole(check):
    def run(value, values, arg):
        return check(value) if isinstance(value, dict) else []
    return run


def _environment(value, values, arg):
    """env_check's rules on every environment in the value (a mapping of mappings holds one per key)."""
    return [(p.field, None, p.message, p.fix) for field, env in env_check.mappings("", value, inside=True)
            for p in env_check.mapping_problems(field, env)]


def _sshd(value, values, arg):
    if not isinstance(value, dict):
        return []
    return [(".%s" % key,) + tuple(rest) for key, *rest in sshd.problems(value, values.get(sshd.OVERRIDE))]


def _boot_target(value):
    return systemd.unit_problem(value, ("target",)) or lockout.target_problem(value)


# {form: (check(value, all values, argument), what reads it)}. ``path under /a, /b`` takes its roots as argument.
FORMS = {
    "unit": (_each(systemd.unit_problem), "systemd and systemctl"),
    "service unit": (_each(lambda v: systemd.unit_problem(v, ("service",))), "systemd and systemctl"),
    "time span": (_each(systemd.span_problem), "systemd, as a time span"),
    "boot target": (_each(_boot_target), "systemd, as the target every boot ends in"),
    "path under": (_under, "the stage, which writes or reads that file on every node"),
    "model folder": (_path(lambda v: paths.system_problem(v, "share, mount and rewrite")),
                     "the model and serve stages (download, fan-out, NFS export, docker -v)"),
    "container path": (_path(lambda v: paths.system_problem(v, "cover", ("/",))), "docker run -v, in the container"),
    "swap file": (_path(paths.swap_problem), "mkswap, swapon and the kernel-memory script"),
    "netplan file": (_path(paths.netplan_problem), "netplan"),
    "controller path": (_each(_controller_path), "the controller"),
    "modprobe options": (_each(words.modprobe_options), "modprobe.d's options line"),
    "sshd settings": (_sshd, "sshd, from its recovery drop-in"),
    "sshd keyword": (_each(sshd.keyword_problem), "the validation of the sshd drop-in"),
    "sysctl settings": (_whole(structured.sysctl_settings), "sysctl.d"),
    "user name": (_each(words.user), "limits.d"),
    "package": (_each(words.package), "apt"),
    "version": (_each(words.version), "apt and the version checks"),
    "https URL": (_each(words.url), "git"),
    "hub repository": (_each(words.hub_repository), "the hub CLI"),
    "image reference": (_each(words.image), "docker"),
    "program": (_each(words.command), "the node, as the program it runs"),
    "argument list": (_each(words.word), "the program, as one argument each (never a shell)"),
    "text": (_each(words.text), "the smoke request"),
    "node name": (_node, "the stage, as the node it runs on"),
    "variable name": (_each(words.variable), "the validation and Ansible"),
    "interface name": (_each(words.interface), "the collective check's NCCL and Gloo socket"),
    "IPv4 address": (_each(words.ipv4), "the collective check's rendezvous"),
    "IP address": (_each(words.ip_address), "the API proxy's listen lines"),
    "network or address": (_each(words.network_or_address), "the firewall's rules (nftables sets)"),
    "as role": (lambda value, values, arg: [], "the role named, whose own declaration holds the form"),
    "address with prefix": (_each(words.address_prefix), "the validation (Docker's daemon.json)"),
    "network": (_each(words.network), "the validation (Docker's daemon.json)"),
    "CPU list": (_each(words.cpus), "docker run --cpuset-cpus"),
    "clock range": (_each(words.clocks), "nvidia-smi -lgc, in a unit's ExecStart= line"),
    "GPU request": (_each(words.gpus), "docker run --gpus"),
    "capability": (_each(words.capability), "docker run --cap-add"),
    "security option": (_each(words.security_option), "docker run --security-opt"),
    "ulimit": (_each(words.ulimit), "docker run --ulimit"),
    "bind mount": (_each(structured.bind_mount), "docker run -v"),
    "device": (_each(structured.device), "docker run --device"),
    "API key": (_each(words.api_key), "the head's key file, the engine and the API proxy's key map"),
    "environment": (_environment, "docker run --env and env files"),
    "JSON object": (_whole(structured.json_object), "JSON (a file on the node or an engine flag)"),
    "boot markers": (_whole(structured.boot_markers), "the serve stage's boot-log check"),
    "boot markers per release": (_whole(structured.boot_markers_per_release), "the serve stage's boot-log check"),
    "flag names per release": (_whole(structured.flag_names_per_release), "the engine flag check"),
    "guards per shape": (_whole(structured.guards_per_shape), "the memory guard"),
    "shape launch": (_whole(structured.shape_launch), "docker run, on the shape it names"),
    "engine flags": (engine_flags.recipe_problems, "the engine's argument parser (its flag table)"),
    "SGLang flags": (lambda v, values, arg: engine_flags.recipe_problems(v, values, "sglang"),
                     "SGLang's argument parser (its flag table)"),
    "engine config of": (engine_flags.config_problems, "vLLM's argument parser, as that flag's JSON (its flag table)"),
    "bench arguments": (engine_flags.bench_problems, "ds41f bench's argument parser"),
}


def parse(line):
    """(form, argument, empty allowed) of a ``Form:`` description line, or None."""
    match = LINE.fullmatch(line)
    if not match:
        return None
    form, arg = match.group("form"), None
    under, of, as_role = _UNDER.fullmatch(form), _OF.fullmatch(form), _AS.fullmatch(form)
    if under:
        form, arg = "path under", under.group("roots")
    elif of:
        form, arg = "engine config of", of.group("flag")
    elif as_role:
        form, arg = "as role", as_role.group("role")
    if form not in FORMS:
        raise ValueError("unknown form %r (plugins/module_utils/forms/__init__.py lists them)" % form)
    return form, arg, bool(match.group("empty"))


def check(form, arg, value, values):
    """[(suffix, item, reason, fix)] of ``value`` against its declared form; ``values``: every variable."""
    return FORMS[form][0](value, values, arg)


def reader(form):
    return FORMS[form][1]
