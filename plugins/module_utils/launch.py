# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The engine's launch spec for one rank: recipe + shape + node, nothing typed twice.

``render(recipe, shape, node, cluster)`` returns the container the rank runs: image, the ``vllm serve``
command, environment, mounts, devices, limits and labels. The tensor-parallel group, the memory sizing and
the CUDA graph sizes come from the shape (``spark_shape``); rank, head address and ``--headless`` from the
node; everything else from the recipe (``group_vars/all/serve.yml``). ``docker_run(spec)`` is the same spec
as a ``docker run`` command line, for people and for the doctor.

Pure Python: runs on the controller (filter), in modules and in unit tests.
"""

from __future__ import annotations

import hashlib
import json

# Recipe keys the spec reads; anything else in the recipe is not part of a launch.
RECIPE_KEYS = (
    "release", "image", "container_name", "served_names", "port", "master_port", "model_dir", "model_mount",
    "entrypoint", "args", "speculative", "compilation", "env", "env_files", "mounts", "devices", "gpus",
    "cap_add", "security_opt", "ulimits", "shm_size", "memory", "cpuset", "max_model_len", "kv_cache_bytes",
)
# The variables recipe_from_vars() reads (the lookup dgxspark.ds41f.serve_recipe collects them).
VAR_NAMES = tuple("serve_" + k for k in RECIPE_KEYS if k not in ("release", "env_files")) + (
    "ds41f_release", "serve_nccl_env_file")
# Flags the shape and the node own: written by render(), refused in the recipe's own args.
RENDERED_FLAGS = (
    "--served-model-name", "--host", "--port", "--tensor-parallel-size", "-tp", "--nnodes", "--node-rank",
    "--master-addr", "--master-port", "--headless", "--max-model-len", "--max-num-seqs",
    "--max-num-batched-tokens", "--kv-cache-memory-bytes", "--long-prefill-token-threshold",
    "--speculative-config", "--compilation-config", "--api-key",
)
LABEL = "ds41f"


class LaunchError(ValueError):
    """The recipe cannot be rendered; the message names the variable and the fix."""


def recipe_from_vars(values):
    """The launch recipe from the recipe's variables (``serve_<key>``, ``ds41f_release``): the one mapping."""
    recipe = {key: values.get("serve_" + key) for key in RECIPE_KEYS}
    recipe["release"] = values.get("ds41f_release")
    nccl = values.get("serve_nccl_env_file")
    recipe["env_files"] = [nccl] if nccl else []
    return recipe


def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def capture_sizes(max_rows):
    """CUDA graph batch sizes up to the shape's decode rows: 1, 2, 4, then every multiple of 8."""
    sizes = [s for s in (1, 2, 4) if s <= max_rows] + list(range(8, max_rows + 1, 8))
    if sizes[-1] != max_rows:
        sizes.append(max_rows)
    return sizes


def shape_key(shape, nodes, context, kv_bytes):
    """What a reshape changes: nodes, tensor parallelism, context, KV, sequences, batch."""
    return "%s tp%d ctx%d kv%d seqs%d tokens%d" % (
        shape["name"], nodes, context, kv_bytes, shape["max_seqs"], shape["batched_tokens"])


def check_recipe(recipe):
    args = recipe.get("args") or []
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            raise LaunchError("serve_args[%d]: %r is not a string. Fix: quote it." % (i, arg))
        name = arg.split("=", 1)[0]
        if name in RENDERED_FLAGS:
            raise LaunchError("serve_args[%d]: %s is rendered from the shape, node or recipe fields; remove it "
                              "from serve_args (set serve_served_names, serve_port, serve_master_port, "
                              "serve_max_model_len, serve_kv_cache_bytes, serve_speculative or "
                              "serve_compilation instead)." % (i, name))
    for key in ("image", "container_name", "model_dir", "model_mount"):
        if not recipe.get(key):
            raise LaunchError("serve_%s: is empty. Fix: set it in group_vars/all/serve.yml." % key)
    if not recipe.get("served_names"):
        raise LaunchError("serve_served_names: is empty. Fix: list at least one served model name.")


def effective_sizing(recipe, shape):
    context = recipe.get("max_model_len") or shape["context"]
    if context > shape["context"]:
        raise LaunchError("serve_max_model_len: %d exceeds what %s holds (%d). Fix: lower it." % (
            context, shape["name"], shape["context"]))
    return context, recipe.get("kv_cache_bytes") or shape["kv_cache_bytes"]


def command(recipe, shape, node, cluster):
    """The ``vllm serve`` arguments of one rank (what follows the image's ``vllm`` entrypoint)."""
    nodes = cluster["nodes"]
    context, kv_bytes = effective_sizing(recipe, shape)
    argv = ["serve", recipe["model_mount"], "--served-model-name"] + list(recipe["served_names"])
    argv += ["--host", "0.0.0.0", "--port", str(recipe["port"])]
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
        argv += ["--compilation-config", json.dumps(comp, sort_keys=True, separators=(",", ":"))]
    return argv + list(recipe.get("args") or [])


def render(recipe, shape, node, cluster):
    """The launch spec of one rank.

    ``recipe``: the serve_* values without the prefix (RECIPE_KEYS); ``shape``: spark_shape;
    ``node``: {name, rank}; ``cluster``: {nodes: count, head_address}.
    """
    recipe = {k: recipe.get(k) for k in RECIPE_KEYS}
    check_recipe(recipe)
    cluster_inputs = {"recipe": recipe, "shape": shape, "cluster": cluster}
    spec = {
        "name": recipe["container_name"],
        "image": recipe["image"],
        "rank": node["rank"],
        "head": node["rank"] == 0,
        "entrypoint": list(recipe.get("entrypoint") or []),
        "command": command(recipe, shape, node, cluster),
        "env": {str(k): str(v) for k, v in sorted((recipe.get("env") or {}).items())},
        "env_files": list(recipe.get("env_files") or []),
        "mounts": list(recipe.get("mounts") or []),
        "devices": list(recipe.get("devices") or []),
        "gpus": recipe.get("gpus") or "",
        "cap_add": list(recipe.get("cap_add") or []),
        "security_opt": list(recipe.get("security_opt") or []),
        "ulimits": list(recipe.get("ulimits") or []),
        "shm_size": recipe.get("shm_size") or "",
        "memory": recipe.get("memory") or "",
        "cpuset": recipe.get("cpuset") or "",
        "port": recipe["port"],
        "served_names": list(recipe["served_names"]),
    }
    spec["labels"] = {
        LABEL + ".release": str(recipe["release"]),
        LABEL + ".recipe": digest(cluster_inputs),
        LABEL + ".shape": shape_key(shape, cluster["nodes"], *effective_sizing(recipe, shape)),
        LABEL + ".rank": str(node["rank"]),
    }
    spec["labels"][LABEL + ".spec"] = digest(spec)
    return spec


def docker_run(spec, image=None, api_key_file=None):
    """``docker run`` argv for a spec (``image`` may pin an image ID instead of the spec's tag)."""
    argv = ["docker", "run", "-d", "--name", spec["name"], "--network", "host", "--ipc", "host",
            "--restart", "no", "--stop-timeout", "60"]
    if spec["gpus"]:
        argv += ["--gpus", spec["gpus"]]
    for device in spec["devices"]:
        argv += ["--device", device]
    for cap in spec["cap_add"]:
        argv += ["--cap-add", cap]
    for opt in spec["security_opt"]:
        argv += ["--security-opt", opt]
    for limit in spec["ulimits"]:
        argv += ["--ulimit", limit]
    if spec["shm_size"]:
        argv += ["--shm-size", spec["shm_size"]]
    if spec["memory"]:
        argv += ["--memory", spec["memory"], "--memory-swap", spec["memory"]]
    if spec["cpuset"]:
        argv += ["--cpuset-cpus", spec["cpuset"]]
    for env_file in spec["env_files"] + ([api_key_file] if api_key_file else []):
        argv += ["--env-file", env_file]
    for key, value in sorted(spec["env"].items()):
        argv += ["--env", "%s=%s" % (key, value)]
    for mount in spec["mounts"]:
        argv += ["--volume", mount]
    for key, value in sorted(spec["labels"].items()):
        argv += ["--label", "%s=%s" % (key, value)]
    if spec["entrypoint"]:
        argv += ["--entrypoint", spec["entrypoint"][0]]
        return argv + [image or spec["image"]] + spec["entrypoint"][1:] + spec["command"]
    return argv + [image or spec["image"]] + spec["command"]

