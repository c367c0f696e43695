# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""One module per serving engine, behind one interface that ``launch.render`` calls.

Each engine module has ``NAME``, ``RENDERED_FLAGS`` (flags it writes from the shape, node and recipe fields,
refused in ``serve_args``), ``check(recipe, shape, context)`` (raises ``LaunchError``), ``command(recipe, shape,
node, cluster, context, kv_bytes, shape_args)`` (the argv after the image's entrypoint), ``rank_env(recipe, shape,
node, cluster, context, shape_args)`` (the settings of this rank an engine's boot reads from its environment),
``attach(command, env)`` (the command with what the engine's parser judges: SGLang's boot builds it from the env),
``fabric_env(recipe, shape, node, cluster)`` (what the engine's collectives read, from the topology),
``api_key(recipe, node)`` (None, or the mount that gives this rank the API key without writing it) and
``API_KEY_ENV_FILE`` (whether the head's key file is passed with ``--env-file``). Pure Python.
"""

from __future__ import annotations

DEFAULT = "vllm"  # a recipe without serve_engine renders vllm serve, as before engines were a choice
# Where every engine's API listens: the head's proxy (module_utils/proxy.py) is the only way in.
LOOPBACK = "127.0.0.1"


class LaunchError(ValueError):
    """The recipe cannot be rendered; the message names the variable and the fix."""


def get(name):
    """The engine module for ``serve_engine`` (empty: vLLM)."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import sglang, vllm

    known = {vllm.NAME: vllm, sglang.NAME: sglang}
    engine = known.get(name or DEFAULT)
    if engine is None:
        raise LaunchError("serve_engine: %r is not an engine. Fix: set it to one of %s." % (
            name, ", ".join(sorted(known))))
    return engine


def refuse_rendered(args, rendered, instead):
    """Refuse a flag of ``serve_args`` that the engine renders itself; ``instead`` names the recipe fields."""
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in rendered:
            raise LaunchError("serve_args[%d]: %s is rendered from the shape, node or recipe fields. Fix: remove it "
                              "from serve_args (set %s instead)." % (i, name, instead))
