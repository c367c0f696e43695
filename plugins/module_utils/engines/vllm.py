# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""vLLM: the ``vllm serve`` arguments of one rank, and sparknet's environment for its one-shot collectives.

The tensor-parallel group, the memory sizing and the CUDA graph sizes come from the shape; rank, head address
and ``--headless`` from the node; the rest from the recipe (``group_vars/all/serve.yml``).
"""

from __future__ import annotations

import json

from ansible_collections.dgxspark.ds41f.plugins.module_utils import sparknet
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import LOOPBACK, LaunchError, refuse_rendered

NAME = "vllm"
# Flags the shape and the node own: written by command(), refused in the recipe's own args.
RENDERED_FLAGS = (
    "--served-model-name", "--host", "--port", "--tensor-parallel-size", "-tp", "--nnodes", "--node-rank",
    "--master-addr", "--master-port", "--headless", "--max-model-len", "--max-num-seqs",
    "--max-num-batched-tokens", "--kv-cache-memory-bytes", "--long-prefill-token-threshold",
    "--speculative-config", "--compilation-config", "--max-cudagraph-capture-size", "--api-key",
)
# vLLM reads its key from VLLM_API_KEY: the serve stage passes the head's key file with --env-file at start, so
# the spec and the command never hold it.
API_KEY_ENV_FILE = True
# The address a rank gives the others for the group's message queues. Unset, vLLM takes the address of the
# default route's interface, and on a node with no default route 0.0.0.0: the head then waits for workers that
# cannot reach it (seen in the lab, docs/lab-engine.md). It must lie on the network of --master-addr.
HOST_IP = "VLLM_HOST_IP"
# Numeric vllm serve flags of the recipe and the range each must lie in: a fraction in (0, 1], or a positive count.
NUMERIC_FLAGS = {"--gpu-memory-utilization": "fraction", "--block-size": "count", "--max-parallel-prefills": "count",
                 "--max-num-partial-prefills": "count", "--prefill-yield-limit-s": "positive"}


def check_number(i, name, value, kind):
    try:
        number = float(value) if kind != "count" else int(value)
    except (TypeError, ValueError):
        number = None
    ok = number is not None and (0 < number <= 1 if kind == "fraction" else number > 0)
    if not ok:
        want = {"fraction": "a fraction in (0, 1], e.g. 0.82", "count": "a whole number above 0",
                "positive": "a number above 0"}[kind]
        raise LaunchError("serve_args[%d]: %s %r is not %s. Fix: give %s %s as the next element of serve_args, "
                          "quoted." % (i, name, value, want, name, want))


def check(recipe, shape, context):
    args = recipe.get("args") or []
    refuse_rendered(args, RENDERED_FLAGS, "serve_served_names, serve_port, serve_master_port, serve_max_model_len, "
                    "serve_kv_cache_bytes, serve_speculative or serve_compilation")
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else None)
        if name in NUMERIC_FLAGS:
            check_number(i, name, value, NUMERIC_FLAGS[name])


def capture_sizes(max_rows):
    """CUDA graph batch sizes up to the shape's decode rows, as spark-ds41f's profiles list them (tests/fixtures/
    release/: 96 rows on the ring, 48 on the triangle): 1, 2, 3, 4, 6, 8, every 4th to 32, then every 8th."""
    series = [1, 2, 3, 4, 6, 8] + list(range(12, 33, 4)) + list(range(40, max_rows + 1, 8))
    sizes = [s for s in series if s <= max_rows]
    if sizes[-1] != max_rows:
        sizes.append(max_rows)
    return sizes


def command(recipe, shape, node, cluster, context, kv_bytes, shape_args=()):
    """The ``vllm serve`` arguments of one rank: what follows the image's ``vllm serve`` entrypoint (the vLLM
    OpenAI image's ENTRYPOINT), so they begin with the model path as spark-ds41f's serve_args do."""
    nodes = cluster["nodes"]
    argv = [recipe["model_mount"], "--served-model-name"] + list(recipe["served_names"])
    # Loopback only: the head's proxy (serve_proxy) asks for the key on every route and listens where the site says.
    argv += ["--host", LOOPBACK, "--port", str(recipe["engine_port"])]
    argv += ["--tensor-parallel-size", str(nodes), "--nnodes", str(nodes), "--node-rank", str(node["rank"]),
             "--master-addr", cluster["head_address"], "--master-port", str(recipe["master_port"])]
    if node["rank"] != 0:
        argv.append("--headless")
    argv += ["--max-model-len", str(context), "--max-num-seqs", str(shape["max_seqs"]),
             "--max-num-batched-tokens", str(shape["batched_tokens"]),
             "--kv-cache-memory-bytes", str(kv_bytes),
             # vLLM refuses a threshold above the context (a lab's short context meets the shape's batch here)
             "--long-prefill-token-threshold", str(min(shape["long_prefill_threshold"], context))]
    if recipe.get("speculative"):
        spec = dict(recipe["speculative"], draft_tensor_parallel_size=nodes)
        argv += ["--speculative-config", json.dumps(spec, sort_keys=True, separators=(",", ":"))]
    if recipe.get("compilation"):
        comp = dict(recipe["compilation"], cudagraph_capture_sizes=capture_sizes(shape["cudagraph_max_rows"]))
        argv += ["--compilation-config", json.dumps(comp, sort_keys=True, separators=(",", ":")),
                 "--max-cudagraph-capture-size", str(shape["cudagraph_max_rows"])]
    return argv + list(recipe.get("args") or []) + list(shape_args or [])


def api_key(recipe, node):
    """Nothing in the spec: the key comes from the env file (API_KEY_ENV_FILE)."""
    return None


def rank_env(recipe, shape, node, cluster, context, shape_args=()):
    """Nothing: vLLM takes its settings as arguments (command)."""
    return {}


def attach(command, env):
    """The command as it is: vLLM's parser judges the command itself."""
    return command


def fabric_env(recipe, shape, node, cluster):
    """sparknet's routing and sizes for this rank (plugins/module_utils/sparknet.py), and the rank's own address on
    the rendezvous network as VLLM_HOST_IP."""
    transport = shape.get("transport")
    problems = sparknet.problems(transport, recipe.get("sparknet_env"), recipe.get("env"))
    if problems:
        field, message, fix = problems[0]
        raise LaunchError("%s: %s Fix: %s" % (field, message, fix))
    if HOST_IP in (recipe.get("env") or {}):
        raise LaunchError("serve_env.%s: is each rank's own management address, from the site file. Fix: remove it; "
                          "change the node's address in the site file instead." % HOST_IP)
    try:
        env = sparknet.environment(transport, node["rank"], cluster["nodes"], node.get("peer_hcas"),
                                   node.get("hcas"), node.get("gid_index"), recipe.get("sparknet_env"))
    except sparknet.SparknetError as exc:
        raise LaunchError(str(exc)) from exc
    if node.get("address"):
        env[HOST_IP] = node["address"]
    return env  # launch.environment sorts the container's whole env
