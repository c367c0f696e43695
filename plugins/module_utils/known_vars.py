# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Variables a site sets that look like the collection's but that no role declares: a typo, refused by name.

Ansible's own argument specs check only the names a role declares, so ``serve_argz: [...]`` would pass and the
real ``serve_args`` keep its default. Here every name with one of the collection's prefixes must be declared in
some role's ``meta/argument_specs.yml`` (the one source), be one of the collection's own internal names (role
vars, facts and registered results, read from the roles, playbooks and modules themselves), or be listed by the
site in ``ds41f_site_variables`` (names the site owns).
"""

from __future__ import annotations

import ast
import difflib
import os

from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

PREFIXES = ("serve_", "fabric_", "model_", "image_", "kernel_", "host_baseline_", "memory_saver_", "verify_",
            "site_config_", "ds41f_")
# The escape: a list of names the site owns, even with one of the prefixes above.
SITE_OWNED = "ds41f_site_variables"
# Set beside the recipe by the inventory plugin (plugin_utils/recipe_files.MARKER).
SET_BY_PLUGINS = ("ds41f_recipe_files",)
_SET_FACT = ("ansible.builtin.set_fact", "set_fact")


def looks_like_ours(name):
    return isinstance(name, str) and name.startswith(PREFIXES)


def _task_names(node, out):
    """set_fact keys and register names anywhere in a parsed playbook, task or handler file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _SET_FACT and isinstance(value, dict):
                out.update(k for k in value if k != "cacheable")
            elif key == "register" and isinstance(value, str):
                out.add(value)
            else:
                _task_names(value, out)
    elif isinstance(node, list):
        for item in node:
            _task_names(item, out)


def _module_facts(path):
    """A module's RETURN text: the ansible_facts it documents land in the fact cache, so in hostvars."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RETURN" for t in node.targets):
            return ast.literal_eval(node.value)
    return ""


def internal_names(root, yaml_load):
    """Names the collection itself sets on hosts: role vars, set_fact keys, registered results, module facts."""
    out = set(SET_BY_PLUGINS)
    for folder in ("roles", "playbooks"):
        for top, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith((".yml", ".yaml")) or "meta" in top.split(os.sep):
                    continue
                with open(os.path.join(top, name)) as handle:
                    text = handle.read()
                role_vars = os.path.basename(top) == "vars"
                if not role_vars and "set_fact" not in text and "register:" not in text:
                    continue  # nothing to read: parsing every file costs controller CPU on each run
                data = yaml_load(text)
                if role_vars and isinstance(data, dict):
                    out.update(data)  # roles/<role>/vars/main.yml: the role's internal names
                _task_names(data, out)
    out.update(module_facts(root, yaml_load))
    return out


def module_facts(root, yaml_load):
    """The facts the collection's modules document in RETURN (ds41f_node, ds41f_serve, ...)."""
    out = set()
    modules = os.path.join(root, "plugins", "modules")
    for name in sorted(os.listdir(modules)):
        path = os.path.join(modules, name)
        if name.endswith(".py"):
            with open(path) as handle:
                if "ansible_facts" not in handle.read():
                    continue
            doc = yaml_load(_module_facts(path) or "{}") or {}
            out.update((doc.get("ansible_facts") or {}).get("contains") or {})
    return out


def _closest(name, declared):
    match = difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.6)
    if match:
        return "; did you mean %s?" % match[0]
    return " (no declared name is close: ansible-doc -t role dgxspark.ds41f.<role> lists a role's variables)."


def problems(names, declared, internal, site_owned=None, origins=None):
    """One problem per name set with a collection prefix that no role declares (``names``: every name set)."""
    own = set(site_owned) if isinstance(site_owned, (list, tuple)) else set()
    origins = origins or {}
    out = []
    for name in sorted(n for n in names if looks_like_ours(n)):
        if name in declared or name in internal or name in own:
            continue
        where = origins.get(name) or "the inventory's group_vars or a play variable"
        out.append(Problem(name, "%s is not a variable of this collection%s It is set in %s and nothing reads "
                           "it." % (name, _closest(name, declared), where),
                           "correct the name where it is written; if the site owns this variable, list it in "
                           "%s: [%s]." % (SITE_OWNED, name)))
    return out
