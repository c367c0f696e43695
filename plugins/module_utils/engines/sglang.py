# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""SGLang: one rank of seed 001's TP4 profile (../shared/seeds/001_9c6b90048b8892ca.txt), launched as its launcher
launches it (tests/fixtures/release/sglang-tp4-ring.yml): through the image's own boot.

The image's ENTRYPOINT (``python3 -u /opt/dsv41/boot.py``, its Dockerfile) receives ``run``, and the boot builds
SGLang's command line from the container's environment: the launcher's settings (MODEL_PATH, TP_SIZE,
CHUNKED_PREFILL_SIZE, ...) and EXTRA_SGLANG_ARGS, the flags that have no setting of their own. Rendered here, per
rank, from the shape and the node: the model path, the served name, the API address, the tensor-parallel group
(NNODES, TP_SIZE, NODE_RANK) and its torch distributed init on the head (DIST_INIT_ADDR, head:serve_master_port;
the seed's port is 20000, line 83), the context, the running request slots (the shape's ``max_seqs``: 16 on
tp4-ring, MAX_RUNNING_REQUESTS, line 37) and the decode graphs' batch (the same value, as the launcher passes it),
the rank's own address, and the smoke test and warm-up settings of the head. The tuned settings are recipe data
(``group_vars/all/serve_sglang.yml``): ``serve_env`` for the launcher's settings, ``serve_args`` for
EXTRA_SGLANG_ARGS.

The API key (``serve_api_key_required``): SGLang reads it from ``--api-key`` only, and the boot turns the
launcher's API_KEY into that flag on SGLang's command line, which every process list of the node shows. So the
head's spec mounts one root-only YAML file, ``api-key: <key>``, that the serve stage writes from the key file on
the head (``serve_state_dir``), and passes ``--config`` to it in EXTRA_SGLANG_ARGS: SGLang's config merger turns
it into ``--api-key`` inside the server process. The boot's own smoke test and warm-up requests would carry no key
(they read API_KEY), so the head skips them; the serve stage's smoke test checks the API with the key.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import LOOPBACK, LaunchError, refuse_rendered

NAME = "sglang"
# The launcher's settings the image's boot reads, and the SGLang flag each stands for (the boot's command line is
# not recorded: this is the launcher's reading of them, start.sh and .env.tp4.example, and of the boot it runs).
SETTING_FLAGS = {
    "MODEL_PATH": "--model-path", "SERVED_MODEL_NAME": "--served-model-name", "HOST": "--host",
    "SERVER_PORT": "--port", "TP_SIZE": "--tp-size", "EP_SIZE": "--ep-size", "NNODES": "--nnodes",
    "NODE_RANK": "--node-rank", "DIST_INIT_ADDR": "--dist-init-addr", "CONTEXT_LENGTH": "--context-length",
    "MEM_FRACTION_STATIC": "--mem-fraction-static", "MAX_RUNNING_REQUESTS": "--max-running-requests",
    "CUDA_GRAPH_MAX_BS_DECODE": "--cuda-graph-max-bs-decode", "CHUNKED_PREFILL_SIZE": "--chunked-prefill-size",
    "MAX_TOTAL_TOKENS": "--max-total-tokens", "SPEC_ALGO": "--speculative-algorithm",
}
ARGS_SETTING = "EXTRA_SGLANG_ARGS"
# Settings the shape, node and recipe fields own: rendered per rank, refused in serve_env.
RENDERED_ENV = ("MODEL_PATH", "DSV41_SOURCE", "SERVED_MODEL_NAME", "HOST", "SERVER_PORT", "NNODES", "TP_SIZE",
                "NODE_RANK", "DIST_INIT_ADDR", "CONTEXT_LENGTH", "MAX_RUNNING_REQUESTS", "CUDA_GRAPH_MAX_BS_DECODE",
                "HOST_IP", "VLLM_HOST_IP", "B12X_ROCE_HCA", "API_KEY", ARGS_SETTING, "SKIP_SMOKE", "WARMUP",
                "SMOKE_QUICK")
# Flags refused in serve_args (EXTRA_SGLANG_ARGS): a setting's flag would be given twice (the boot's and this one);
# the boot launches with the decoder SWA bounded replay itself (seed line 112).
RENDERED_FLAGS = tuple(SETTING_FLAGS.values()) + (
    "--model", "--tp", "--tensor-parallel-size", "--api-key", "--config", "--enable-decoder-swa-bounded-replay")
# The image's own boot and what the launcher passes it (its Dockerfile's CMD).
BOOT_RUN = "run"
# The head's smoke test and warm-up (the boot's own, skipped: see the module's docstring); the workers skip the
# smoke test as the launcher's workers do.
HEAD_ENV = {"SKIP_SMOKE": "1", "SMOKE_QUICK": "1", "WARMUP": "0"}
WORKER_ENV = {"SKIP_SMOKE": "1"}
# The key's config file: in the container, and the serve role's serve_state_dir default on the head (the doctor
# and the validation render from host variables, where a role default is not seen).
KEY_CONFIG = "/run/ds41f/api-key.yaml"
KEY_CONFIG_NAME = "api-key.yaml"
DEFAULT_STATE_DIR = "/etc/ds41f/serve"
# vLLM reads VLLM_API_KEY from the key file passed with --env-file; SGLang does not, so no env file is passed.
API_KEY_ENV_FILE = False
# vLLM-only recipe fields: an SGLang recipe that sets them would be silently ignored, so it is refused.
VLLM_ONLY = ("speculative", "compilation", "kv_cache_bytes", "sparknet_env")

# Memory at 1M context (seed 001). The largest static memory fraction measured safe for a prefill chunk size:
# 4096-token chunks at 0.80 (line 112; upstream's 1024 at 0.80, lines 70 and 75), 8192-token chunks at 0.78
# (line 46: at 0.80 the head fell to 2.7 GiB available). Larger chunks are refused: 16384 at 1M left a worker
# with 2.5 GiB and hung the node (line 112); nothing between 8192 and 16384 was measured.
LONG_CONTEXT = 1_000_000
CHUNK_FRACTION = ((4096, 0.80), (8192, 0.78))
CHUNK_SETTING = "CHUNKED_PREFILL_SIZE"
FRACTION_SETTING = "MEM_FRACTION_STATIC"


class BootCommand(list):
    """The rank's command (``run``, for the image's boot), carrying ``server_argv``: the SGLang arguments the boot
    builds from the rank's environment, for SGLang's own parser (engines/sglang_check.py), since the command itself
    holds none of them."""

    def __init__(self, words, server_argv):
        super().__init__(words)
        self.server_argv = list(server_argv)


def max_fraction(chunk):
    """The largest measured-safe static memory fraction for a chunk size at 1M context, or None (refused)."""
    return next((fraction for size, fraction in CHUNK_FRACTION if chunk <= size), None)


def check_memory(env, context):
    """Seed 001's chunked-prefill and memory-fraction rules, at 1M context only (the seed measured nothing else)."""
    if context < LONG_CONTEXT:
        return
    for name in (CHUNK_SETTING, FRACTION_SETTING):
        if name not in env:
            raise LaunchError("serve_env.%s: is not set, and at a %d-token context the boot's own default was never "
                              "measured on GB10. Fix: set it in serve_env (seed 001: %s)." % (
                                  name, context, "8192" if name == CHUNK_SETTING else "0.78 with 8192, 0.80 with 4096"))
    chunk, fraction = env[CHUNK_SETTING], env[FRACTION_SETTING]
    try:
        chunk_n, fraction_f = int(chunk), float(fraction)
    except (TypeError, ValueError):
        raise LaunchError("serve_env: %s %r / %s %r are not a token count and a fraction. Fix: quote numbers, e.g. "
                          "\"8192\" and \"0.78\"." % (CHUNK_SETTING, chunk, FRACTION_SETTING, fraction)) from None
    limit = max_fraction(chunk_n)
    if limit is None:
        raise LaunchError("serve_env.%s: %d is above 8192 at a %d-token context: seed 001 warns never to raise the "
                          "chunk (16384 at 1M left a worker 2.5 GiB and hung the node). Fix: use 8192 (with %s 0.78) "
                          "or 4096 (with 0.80)." % (CHUNK_SETTING, chunk_n, context, FRACTION_SETTING))
    if not 0 < fraction_f <= limit:
        raise LaunchError("serve_env.%s: %s is above %.2f, the most seed 001 measured safe with %d-token chunks at 1M "
                          "context (0.80 with 8192 left the head 2.7 GiB). Fix: lower it to %.2f or use smaller "
                          "chunks." % (FRACTION_SETTING, fraction, limit, chunk_n, limit))


def check(recipe, shape, context):
    args = recipe.get("args") or []
    refuse_rendered(args, RENDERED_FLAGS, "serve_served_names, serve_port, serve_master_port, serve_max_model_len, "
                    "serve_api_key_required or the setting of serve_env that stands for it")
    for key in VLLM_ONLY:
        if recipe.get(key):
            raise LaunchError("serve_%s: is a vLLM setting, and serve_engine is sglang. Fix: set it to its empty "
                              "value ({} or 0) in the SGLang recipe." % key)
    if len(recipe.get("served_names") or []) != 1:
        raise LaunchError("serve_served_names: SGLang serves one model name, the recipe lists %d. Fix: keep one."
                          % len(recipe.get("served_names") or []))
    env = {str(k): str(v) for k, v in (recipe.get("env") or {}).items()}
    for key in sorted(env):
        if key in RENDERED_ENV:
            raise LaunchError("serve_env.%s: is rendered per rank from the shape, the node and the recipe fields. "
                              "Fix: remove it." % key)
    check_memory(env, context)


def command(recipe, shape, node, cluster, context, kv_bytes, shape_args=()):
    """``run`` for the image's boot: the rank's settings are its environment (rank_env). ``kv_bytes`` is not used:
    SGLang sizes its KV pool from the memory fraction (and MAX_TOTAL_TOKENS)."""
    return [BOOT_RUN]


def attach(command, env):
    """The rank's command carrying the SGLang arguments the boot builds from the container's whole ``env``."""
    return BootCommand(command, server_argv(env))


def server_argv(env):
    """SGLang's arguments as the boot builds them from ``env``: each setting's flag, then EXTRA_SGLANG_ARGS."""
    argv = []
    for key, flag in SETTING_FLAGS.items():
        if key in env:
            argv += [flag, str(env[key])]
    return argv + str(env.get(ARGS_SETTING) or "").split()


def rank_env(recipe, shape, node, cluster, context, shape_args=()):
    """The settings this rank's boot reads that the shape, the node and the recipe fields decide."""
    nodes, head = cluster["nodes"], node["rank"] == 0
    args = list(recipe.get("args") or []) + list(shape_args or [])
    if head and recipe.get("api_key_required") is not False:
        args += ["--config", KEY_CONFIG]
    env = {"MODEL_PATH": recipe["model_mount"], "DSV41_SOURCE": recipe["model_mount"],
           # loopback only: the head's proxy (serve_proxy) is the way in, on serve_port
           "SERVED_MODEL_NAME": recipe["served_names"][0], "HOST": LOOPBACK, "SERVER_PORT": str(recipe["engine_port"]),
           "NNODES": str(nodes), "TP_SIZE": str(nodes), "NODE_RANK": str(node["rank"]),
           "DIST_INIT_ADDR": "%s:%s" % (cluster["head_address"], recipe["master_port"]),
           "CONTEXT_LENGTH": str(context), "MAX_RUNNING_REQUESTS": str(shape["max_seqs"]),
           "CUDA_GRAPH_MAX_BS_DECODE": str(shape["max_seqs"]), ARGS_SETTING: " ".join(args)}
    env.update(HEAD_ENV if head else WORKER_ENV)
    return env


def api_key(recipe, node):
    """On the head, when a key is required (unset counts as the role's default, true): the mount that gives SGLang
    the key file (its --config flag is in EXTRA_SGLANG_ARGS) and the host file the serve stage writes
    (``api_key_config`` in the spec)."""
    required = recipe.get("api_key_required")
    if node["rank"] != 0 or required is False:
        return None
    host = "%s/%s" % ((recipe.get("state_dir") or DEFAULT_STATE_DIR).rstrip("/"), KEY_CONFIG_NAME)
    return {"mounts": ["%s:%s:ro" % (host, KEY_CONFIG)], "config": host}


def fabric_env(recipe, shape, node, cluster):
    """This rank's own address (HOST_IP, VLLM_HOST_IP, as the launcher gives each rank) and RoCEnante's HCA list
    (B12X_ROCE_HCA, seed line 45) from this node's NCCL HCAs."""
    env = {}
    if node.get("address"):
        env.update(HOST_IP=node["address"], VLLM_HOST_IP=node["address"])
    hcas = list(node.get("hcas") or [])
    if hcas:
        env["B12X_ROCE_HCA"] = ",".join(hcas)
    return env
