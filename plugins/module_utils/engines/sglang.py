# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""SGLang: the launch arguments of one rank for seed 001's TP4 profile (../shared/seeds/001_9c6b90048b8892ca.txt).

Rendered here, from the shape and the node: the model path, the served name, the API address, the tensor
parallel group (``--tp-size``, ``--nnodes``, ``--node-rank``) and its torch distributed init on the head
(``--dist-init-addr head:serve_master_port``; the seed's port is 20000, line 83), the context and the running
request slots (the shape's ``max_seqs``: 16 on tp4-ring, the seed's MAX_RUNNING_REQUESTS, line 37). The tuned
flags and the ``DSV41_*`` environment are recipe data (``group_vars/all/serve_sglang.yml``).

The image's entrypoint receives these arguments; the seed launches through its own boot.py and does not print
the command line, so the entrypoint is the recipe's (``serve_entrypoint``).

The API key (``serve_api_key_required``): SGLang reads it from ``--api-key`` only, no environment variable, and a
key on the command line would show in ``docker inspect``, the doctor's rows and every node's process list. So the
head's spec mounts one root-only YAML file, ``api-key: <key>``, that the serve stage writes from the key file on
the head (``serve_state_dir``), and passes ``--config`` to it: SGLang's config merger turns it into ``--api-key``
inside the server process. The rendered command names the file, never the key.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import LOOPBACK, LaunchError, refuse_rendered

NAME = "sglang"
RENDERED_FLAGS = (
    "--model-path", "--model", "--served-model-name", "--host", "--port", "--tp-size", "--tp",
    "--tensor-parallel-size", "--nnodes", "--node-rank", "--dist-init-addr", "--context-length",
    "--max-running-requests", "--api-key", "--config",
)
# The key's config file: in the container, and the serve role's serve_state_dir default on the head (the doctor
# and the validation render from host variables, where a role default is not seen).
KEY_CONFIG = "/run/ds41f/api-key.yaml"
KEY_CONFIG_NAME = "api-key.yaml"
DEFAULT_STATE_DIR = "/etc/ds41f/serve"
# vLLM reads VLLM_API_KEY from the key file passed with --env-file; SGLang does not, so no env file is passed.
API_KEY_ENV_FILE = False
# RoCEnante's rails on this node come from the topology (the seed writes them by hand, line 45).
DERIVED_ENV = ("B12X_ROCE_HCA",)
# vLLM-only recipe fields: an SGLang recipe that sets them would be silently ignored, so it is refused.
VLLM_ONLY = ("speculative", "compilation", "kv_cache_bytes", "sparknet_env")

# Memory at 1M context (seed 001). The largest static memory fraction measured safe for a prefill chunk size:
# 4096-token chunks at 0.80 (line 112; upstream's 1024 at 0.80, lines 70 and 75), 8192-token chunks at 0.78
# (line 46: at 0.80 the head fell to 2.7 GiB available). Larger chunks are refused: 16384 at 1M left a worker
# with 2.5 GiB and hung the node (line 112); nothing between 8192 and 16384 was measured.
LONG_CONTEXT = 1_000_000
CHUNK_FRACTION = ((4096, 0.80), (8192, 0.78))
CHUNK_FLAG = "--chunked-prefill-size"
FRACTION_FLAG = "--mem-fraction-static"


def flag_value(args, name):
    """(index, value) of ``name`` in ``args`` (``--x v`` or ``--x=v``), or (None, None)."""
    for i, arg in enumerate(args):
        if arg == name:
            return i, args[i + 1] if i + 1 < len(args) else None
        if arg.startswith(name + "="):
            return i, arg.split("=", 1)[1]
    return None, None


def max_fraction(chunk):
    """The largest measured-safe --mem-fraction-static for a chunk size at 1M context, or None (refused)."""
    return next((fraction for size, fraction in CHUNK_FRACTION if chunk <= size), None)


def check_memory(args, context):
    """Seed 001's chunked-prefill and memory-fraction rules, at 1M context only (the seed measured nothing else)."""
    if context < LONG_CONTEXT:
        return
    ci, chunk = flag_value(args, CHUNK_FLAG)
    fi, fraction = flag_value(args, FRACTION_FLAG)
    for index, name in ((ci, CHUNK_FLAG), (fi, FRACTION_FLAG)):
        if index is None:
            raise LaunchError("serve_args: %s is not set, and at a %d-token context SGLang's own default was never "
                              "measured on GB10. Fix: add %s to serve_args (seed 001: %s)." % (
                                  name, context, name, "8192" if name == CHUNK_FLAG else "0.78 with 8192, 0.80 "
                                  "with 4096"))
    try:
        chunk_n, fraction_f = int(chunk), float(fraction)
    except (TypeError, ValueError):
        raise LaunchError("serve_args[%d]: %s %r / %s %r are not a token count and a fraction. Fix: quote "
                          "numbers, e.g. \"8192\" and \"0.78\"." % (ci, CHUNK_FLAG, chunk, FRACTION_FLAG,
                                                                      fraction)) from None
    limit = max_fraction(chunk_n)
    if limit is None:
        raise LaunchError("serve_args[%d]: %s %d is above 8192 at a %d-token context: seed 001 warns never to "
                          "raise the chunk (16384 at 1M left a worker 2.5 GiB and hung the node). Fix: use 8192 "
                          "(with %s 0.78) or 4096 (with 0.80)." % (ci, CHUNK_FLAG, chunk_n, context, FRACTION_FLAG))
    if not 0 < fraction_f <= limit:
        raise LaunchError("serve_args[%d]: %s %s is above %.2f, the most seed 001 measured safe with %d-token "
                          "chunks at 1M context (0.80 with 8192 left the head 2.7 GiB). Fix: lower it to %.2f or "
                          "use smaller chunks." % (fi, FRACTION_FLAG, fraction, limit, chunk_n, limit))


def check(recipe, shape, context):
    args = recipe.get("args") or []
    refuse_rendered(args, RENDERED_FLAGS, "serve_served_names, serve_port, serve_master_port, serve_max_model_len "
                    "or serve_api_key_required")
    for key in VLLM_ONLY:
        if recipe.get(key):
            raise LaunchError("serve_%s: is a vLLM setting, and serve_engine is sglang. Fix: set it to its empty "
                              "value ({} or 0) in the SGLang recipe." % key)
    if len(recipe.get("served_names") or []) != 1:
        raise LaunchError("serve_served_names: SGLang serves one model name, the recipe lists %d. Fix: keep one."
                          % len(recipe.get("served_names") or []))
    for key in sorted(recipe.get("env") or {}):
        if key in DERIVED_ENV:
            raise LaunchError("serve_env.%s: is derived per node from the topology (spark_nccl_hcas). Fix: remove "
                              "it." % key)
    check_memory(args, context)


def command(recipe, shape, node, cluster, context, kv_bytes):
    """SGLang's server arguments of one rank (what follows the image's entrypoint). ``kv_bytes`` is not used:
    SGLang sizes its KV pool from --mem-fraction-static."""
    nodes = cluster["nodes"]
    argv = ["--model-path", recipe["model_mount"], "--served-model-name", recipe["served_names"][0],
            "--host", LOOPBACK, "--port", str(recipe["engine_port"]),
            "--tp-size", str(nodes), "--nnodes", str(nodes), "--node-rank", str(node["rank"]),
            "--dist-init-addr", "%s:%s" % (cluster["head_address"], recipe["master_port"]),
            "--context-length", str(context), "--max-running-requests", str(shape["max_seqs"])]
    return argv + list(recipe.get("args") or [])


def api_key(recipe, node):
    """On the head, when a key is required (unset counts as the role's default, true): the arguments and the
    mount that give SGLang the key, and the host file the serve stage writes (``api_key_config`` in the spec)."""
    required = recipe.get("api_key_required")
    if node["rank"] != 0 or required is False:
        return None
    host = "%s/%s" % ((recipe.get("state_dir") or DEFAULT_STATE_DIR).rstrip("/"), KEY_CONFIG_NAME)
    return {"args": ["--config", KEY_CONFIG], "mounts": ["%s:%s:ro" % (host, KEY_CONFIG)], "config": host}


def fabric_env(recipe, shape, node, cluster):
    """RoCEnante's HCA list (B12X_ROCE_HCA, seed line 45) from this node's NCCL HCAs; nothing without them."""
    hcas = list(node.get("hcas") or [])
    return {"B12X_ROCE_HCA": ",".join(hcas)} if hcas else {}
