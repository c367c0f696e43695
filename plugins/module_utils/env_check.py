# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The syntax of every environment the recipe renders, wherever it is written.

An environment is any mapping under a variable or key named ``env`` or ``*_env``/``*_env_*`` (``serve_env``,
``model_serve_env``, ``fabric_nccl_env_ring``, ``serve_shape_launch.<shape>.env``, the transports of
``serve_sparknet_env``): found by walking the recipe, not listed by hand. Each key must be a variable name
(``docker run --env`` and env files split on ``=`` and lines), each value one line without a NUL byte. Keys the
site's topology derives per node are refused in every one of them, not only in the variables that render them.
"""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import nccl, sparknet
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

_ENV_NAME = re.compile(r"(^|_)env($|_)")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Derived per node from the site (cables, GID slot, management netdev and address): vLLM's VLLM_HOST_IP
# (engines/vllm.py) and SGLang's B12X_ROCE_HCA (engines/sglang.py) beside NCCL's and sparknet's.
TOPOLOGY_OWNED = frozenset(nccl.TOPOLOGY_KEYS + sparknet.DERIVED + ("VLLM_HOST_IP", "B12X_ROCE_HCA"))


def is_env_name(name):
    return isinstance(name, str) and bool(_ENV_NAME.search(name)) and not name.endswith(("_file", "_files"))


def mappings(name, value, inside=False):
    """[(field, mapping)]: every environment mapping in one recipe variable."""
    if not isinstance(value, dict):
        return []
    inside = inside or is_env_name(name.rpartition(".")[2])
    if inside and not (value and all(isinstance(v, dict) for v in value.values())):
        return [(name, value)]  # a mapping of mappings (serve_sparknet_env's transports) holds environments
    out = []
    for key, item in value.items():
        out.extend(mappings("%s.%s" % (name, key), item, inside))
    return out


def _value_problem(value):
    """(message, fix) for a value docker --env cannot carry; the value itself is never shown (it may be a secret)."""
    if isinstance(value, (dict, list)) or value is None:
        return ("is a %s; an environment value is one string or number." % type(value).__name__,
                "write a single value.")
    text = value if isinstance(value, str) else str(value)
    for char, what in (("\n", "a newline"), ("\r", "a carriage return"), ("\0", "a NUL byte")):
        if char in text:
            return ("holds %s; docker --env and env files take one line per variable." % what,
                    "write the value on one line without control characters.")
    return None


def problems(values):
    """Problems of every environment in ``values`` ({variable: value})."""
    return [p for var in sorted(values) for field, env in mappings(var, values[var])
            for p in mapping_problems(field, env)]


def mapping_problems(field, env):
    """Problems of one environment mapping, named ``field.KEY``."""
    out = []
    for key, value in env.items() if isinstance(env, dict) else ():
        where = "%s.%s" % (field, key)
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            out.append(Problem(where, "%r is not an environment variable name." % (key,),
                               "use letters, digits and underscores, not starting with a digit."))
            continue
        if key in TOPOLOGY_OWNED:
            out.append(Problem(where, "is derived per node from the site's topology; set here it would override that "
                               "on every rank.", "remove it; change the site file (cables, gid_index, "
                               "management_interface, addresses) instead."))
            continue
        bad = _value_problem(value)
        if bad:
            out.append(Problem(where, *bad))
    return out
