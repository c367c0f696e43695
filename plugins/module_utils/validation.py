# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Everything the validation play checks, as one pure function over plain data.

The action plugin ``dgxspark.ds41f.validate`` gathers the site and each host's variables and calls ``check``;
the unit tests call it directly. Nothing here opens a connection: the site model, the recipe against the
roles' argument specs (sizes with their units, names in one character set and the form of each value's
destination among them, ``forms``; every message names where the value lands), variables with the
collection's prefixes that no role declares (``known_vars``), the syntax of every environment (``env_check``), the
fabric and management network against the networks the nodes run (``node_networks``), the cross-field rules and
every rank's launch spec (and the engine's own parser, vLLM's or SGLang's, where the controller has it), all on
the controller. The image lock's pins are checked by the
image stage's own controller-side ``image_lock`` step, before it touches a node.
"""

from __future__ import annotations

import functools
import json
import os

from ansible_collections.dgxspark.ds41f.plugins.module_utils import (
    env_check,
    known_vars,
    launch,
    node_networks,
    recipe,
    topology,
    vllm_check,
)
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import sglang_check
from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import engine_flags
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Variables the inventory plugin derives; a different value in hostvars means the inventory was edited by hand.
DERIVED = ("spark_rank", "spark_links", "spark_nccl_hcas", "ansible_host")
# The site file's folder (the inventory plugin's): files the site names on the controller are read from it.
SITE_DIR = "spark_site_dir"
TLS_FIELDS = ("serve_tls_certificate", "serve_tls_key")


def variable_names(specs):
    """Every recipe variable the validation reads."""
    declared = {name for options in specs.values() for name in options}
    return sorted(declared | set(launch.VAR_NAMES) | {"serve_max_model_len", "host_baseline_health", SITE_DIR})


@functools.lru_cache(maxsize=1)
def internal_names():
    """The collection's own internal names (role vars, facts, registered results): never a site's typo."""
    import yaml  # here: PyYAML is the controller's (ansible-core's own requirement); module_utils import stdlib only

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return frozenset(known_vars.internal_names(ROOT, lambda text: yaml.load(text, Loader=loader)))


def spec_defaults(specs):
    """{name: default} of every option that declares one: what a role reads when nothing sets it."""
    return {name: spec["default"] for options in specs.values() for name, spec in options.items() if "default" in spec}


def site_problems(cluster, site, values, specs, where, set_names):
    """The rules over names, environments and networks (unknown variables, env syntax, address collisions)."""
    declared = {name for options in specs.values() for name in options}
    problems = known_vars.problems(set_names, declared, internal_names(), values.get(known_vars.SITE_OWNED), where)
    problems += env_check.problems({name: values[name] for name in declared if name in values})
    return problems + node_networks.problems(cluster, dict(spec_defaults(specs), **values), site.get("nodes") or ())


def origins(names, site_vars, recipe_files, extra_vars, values):
    """{name: where its value is written}, for the messages of pins and ranges."""
    out = {}
    for name in names:
        if name in (extra_vars or {}):
            out[name] = "-e (extra vars)"
        elif name in (site_vars or {}):
            out[name] = "the site file's vars:"
        elif name in recipe_files:
            where, raw = recipe_files[name]
            same = raw == values.get(name) or (isinstance(raw, str) and "{{" in raw)
            out[name] = where if same else "the inventory's group_vars or a play variable (over %s)" % where
        else:
            out[name] = "the inventory's group_vars or a play variable"
    return out


def _problem(text, default_field):
    """A Problem from a 'field: message Fix: fix' line (launch and lock errors are written that way)."""
    field, sep, rest = text.partition(": ")
    if not sep or " " in field:
        field, rest = default_field, text
    message, _, fix = rest.partition(" Fix: ")
    return Problem(field, message.strip(), fix.strip() or "correct it in the recipe.")


def launch_problems(cluster, host_values):
    """Render every rank's launch spec as the serve stage will; what it refuses, named before any connection."""
    problems, argvs, sglang_ranks = [], [], []
    shape = cluster.groupvars()["spark_shape"]
    for node in cluster.nodes:
        values = host_values.get(node.name) or {}
        if "serve_image" not in values:
            continue  # no serve recipe for this play: the serve stage checks its own
        try:
            spec = launch.render(launch.recipe_from_vars(values), shape, launch.node_from_vars(values, node.rank),
                                 {"nodes": len(cluster.nodes), "head_address": cluster.head.address})
        except launch.LaunchError as exc:
            problems.append(_problem(str(exc), "serve_args"))
            continue
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            problems.append(Problem("serve_*", "%s's launch spec cannot be rendered: %s." % (node.name, exc),
                                    "correct the serve_* variable of the wrong type (named above, if any)."))
            continue
        if (values.get("serve_engine") or "vllm") == "vllm":  # vLLM's parser judges vLLM's command only
            argvs.append((node, values, launch.program_args(spec)))
        elif values.get("serve_engine") == sglang_check.NAME:
            sglang_ranks.append(("%d (%s)" % (node.rank, node.name), spec["command"]))
    if sglang_ranks:  # SGLang's parser, where the controller has it (no lab node can parse it)
        head = host_values.get(cluster.head.name) or {}
        paths = head.get(sglang_check.PATH_VAR) or []
        problems += [Problem(*p) for p in sglang_check.problems(sglang_ranks, paths,
                                                                head.get(sglang_check.PYTHON_VAR) or None)]
    if argvs and vllm_check.available():
        values = argvs[0][1]
        patched = (values.get("serve_patched_flags") or {}).get(values.get("ds41f_release")) or []
        try:
            verdicts = vllm_check.errors([a for _, _, a in argvs], patched)
        except RuntimeError as exc:
            return problems + [Problem("vllm", "%s." % exc, "repair the controller's vLLM install, or remove it "
                                       "from the controller's Python (the worker ranks then parse the command).")]
        refused = {}  # one problem per distinct refusal, naming the ranks it hit
        for (node, _, _), error in zip(argvs, verdicts, strict=True):
            if error:
                refused.setdefault(error, []).append("%d (%s)" % (node.rank, node.name))
        for error, ranks in refused.items():
            problems.append(Problem("serve_args", "vLLM's argument parser refuses the command of rank %s: %s" % (
                ", ".join(ranks), error), "correct or remove the flag it names; a flag only the release's patched "
                "vLLM knows goes in serve_patched_flags."))
    return problems


def parser_note(values):
    """How the validation's message says the rendered commands were parsed, for the engine ``values`` select."""
    if values.get("serve_engine") == sglang_check.NAME:
        if sglang_check.available(values.get(sglang_check.PATH_VAR) or []):
            return " and parsed by SGLang's argument parser"
        return (" (SGLang's parser is not on the controller, so no rank's command was parsed: install sglang "
                "there or set %s)" % sglang_check.PATH_VAR)
    if vllm_check.available():
        return " and parsed by vLLM"
    return " (vLLM's parser is not importable on the controller: the worker ranks parse it)"


def table_note(values):
    """Which flag table the recipe's engine flags were checked against (forms/engine_flags.py)."""
    engine = values.get("serve_engine") or "vllm"
    return "serve_args checked against the flag table of %s" % engine_flags.table(engine)["name"]


def check(site, hosts, host_values, specs, recipe_files=None, extra_vars=None, vault=None):
    """(cluster or None, [Problem]) for a site and each host's variables.

    ``host_values``: {host: {name: value}} (plain data, templated); ``specs``: recipe.load_role_specs();
    ``recipe_files``: {name: (file, raw value)} of the collection recipe; ``extra_vars``: the run's -e;
    ``vault(path)``: a vault-encrypted file's bytes (the site's TLS key may be one).
    """
    if not site:
        return None, [Problem("inventory", "the hosts are not from the dgxspark.ds41f.spark_topology inventory plugin.",
                              "point -i at a site file (*.spark.yml).")]
    try:
        cluster = topology.build(site)
    except topology.TopologyError as exc:
        return None, list(exc.problems)
    problems, seen = [], set()

    def add(items):
        for problem in items:
            if str(problem) not in seen:  # group vars repeat on every host: report each once
                seen.add(str(problem))
                problems.append(problem)

    names = [n.name for n in cluster.nodes]
    if sorted(hosts) != sorted(names):
        add([Problem("hosts", "the play targets %s but the site has %s." % (", ".join(sorted(hosts)), ", ".join(names)),
                     "run stages against the whole cluster; use --limit only for read-only checks.")])
    site_vars = cluster.extra_vars
    checked = set()
    for host in hosts:
        if host not in names:
            continue
        values = host_values.get(host) or {}
        own = cluster.hostvars(host)
        for key in DERIVED:
            if key in values and values[key] != own[key]:
                add([Problem("%s.%s" % (host, key), "differs from what the site file derives.",
                             "remove the hand-set %s; the inventory plugin owns it." % key)])
        # Hosts whose variables differ only in what the site derives per node get the same verdict: check once.
        fingerprint = json.dumps({k: v for k, v in values.items() if k not in own}, sort_keys=True, default=repr)
        if fingerprint in checked:
            continue
        checked.add(fingerprint)
        where = origins(values, site_vars, recipe_files or {}, extra_vars, values)
        # A listener left at its role default still takes its port, and the scrub's period is judged against its
        # budget left at the default: those defaults join the cross-field rules.
        defaults = {name: spec["default"] for options in specs.values() for name, spec in options.items()
                    if (name in recipe.LISTENERS and isinstance(spec.get("default"), int))
                    or name in recipe.SCRUB_SPANS}
        found = recipe.check_vars(values, specs, where)
        refused = {p.field for p in found}  # a cross-field rule does not refuse again what a variable's form did
        found += [p for p in recipe.cross_checks(cluster, dict(defaults, **values)) + tls_problems(values, vault)
                  if p.field not in refused]
        fields = {p.field for p in found}  # an env key another rule refused already is not named twice
        set_names = set(values) | set(extra_vars or {})
        add(found + [p for p in site_problems(cluster, site, values, specs, where, set_names)
                     if p.field not in fields])
    if not problems:  # render only a recipe whose values have the declared types
        add(launch_problems(cluster, {h: host_values.get(h) or {} for h in names}))
    return cluster, with_destinations(problems, specs)


def _tls(values):
    """plugin_utils/tls.py (cryptography, the controller's), imported only where the site names a TLS file."""
    if not any(values.get(name) for name in TLS_FIELDS):
        return None
    from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls

    return tls


def tls_problems(values, vault=None):
    """The site's TLS certificate and key, refused as the validation refuses any value."""
    tls = _tls(values)
    return [Problem(*p) for p in tls.problems(values, vault)] if tls else []


def tls_notices(values, head_address, vault=None):
    """What clients will object to in a valid certificate, as '<field>: <text>. Fix: <fix>.' lines: the
    validation warns, never refuses (plugin_utils/tls.py says why)."""
    tls = _tls(values)
    return ["%s: %s. Fix: %s." % n for n in tls.notices(values, head_address, vault=vault)] if tls else []


def with_destinations(problems, specs):
    """Each problem of a declared variable with where the roles render it (a node file, a task argument): read from
    the roles' templates, tasks and vars only when there is a problem to say it of."""
    declared = {name for options in specs.values() for name in options}
    ours = [p for p in problems if p.field.split(".", 1)[0].split("[", 1)[0] in declared]
    if not ours:
        return problems
    from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import render_walk  # jinja2: the controller's

    out = []
    for problem in problems:
        where = render_walk.destination(ROOT, problem.field) if problem in ours else None
        out.append(Problem(problem.field, "%s It lands in %s." % (problem.message, where), problem.fix)
                   if where else problem)
    return out
