# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The engine's launch spec for one rank: recipe + shape + node, nothing typed twice.

``render(recipe, shape, node, cluster)`` returns the container the rank runs: image, the engine's command
(``serve_engine``: ``vllm serve`` or SGLang, one module each under ``engines/``),
environment, mounts, devices, limits and labels. The tensor-parallel group, the memory sizing and the CUDA
graph sizes come from the shape (``spark_shape``); rank, head address and ``--headless`` from the
node; the engine's fabric environment (sparknet's routing) from the node's cables and the shape's
transport (``sparknet.py``); the launch
details a shape was qualified with (devices, cpuset, env) from ``serve_shape_launch``; everything else from
the recipe (``group_vars/all/serve.yml``). ``docker_run(spec)`` is the same spec
as a ``docker run`` command line, for people and for the doctor.

Pure Python: runs on the controller (filter), in modules and in unit tests.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engines
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import LaunchError  # noqa: F401 (the API's)
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines.vllm import (  # noqa: F401 (kept names)
    NUMERIC_FLAGS,
    RENDERED_FLAGS,
    capture_sizes,
    check_number,
)

# Recipe keys the spec reads; anything else in the recipe is not part of a launch.
RECIPE_KEYS = (
    "release", "image", "container_name", "served_names", "port", "engine_port", "master_port", "model_dir",
    "model_mount",
    "entrypoint", "image_entrypoint", "args", "speculative", "compilation", "env", "env_files", "mounts", "devices",
    "gpus", "cap_add", "security_opt", "ulimits", "shm_size", "memory", "cpuset", "max_model_len", "kv_cache_bytes",
    "sparknet_env", "shape_launch", "engine", "api_key_required", "state_dir", "privileged",
)
# Read by an engine other than vLLM only (SGLang's key file): a vLLM spec and its labels stay as they were.
NOT_VLLM_KEYS = ("engine", "api_key_required", "state_dir", "privileged")
# What the topology model gives each node (the spark_topology inventory's host variables).
NODE_VARS = ("spark_peer_hcas", "spark_nccl_hcas", "spark_gid_index", "spark_nodes")
# The variables recipe_from_vars() reads (the lookup dgxspark.ds41f.serve_recipe collects them).
VAR_NAMES = tuple("serve_" + k for k in RECIPE_KEYS if k not in ("release", "env_files")) + (
    "ds41f_release", "serve_nccl_env_file") + NODE_VARS
# What a shape's entry in serve_shape_launch may set: the launch details its qualified run used.
SHAPE_LAUNCH_KEYS = ("cpuset", "env", "args", "device_binds", "device_cgroup_rules")
LABEL = "ds41f"


def recipe_from_vars(values):
    """The launch recipe from the recipe's variables (``serve_<key>``, ``ds41f_release``): the one mapping."""
    recipe = {key: values.get("serve_" + key) for key in RECIPE_KEYS}
    recipe["release"] = values.get("ds41f_release")
    nccl = values.get("serve_nccl_env_file")
    recipe["env_files"] = [nccl] if nccl else []
    return recipe


def node_from_vars(values, rank):
    """The node part of a launch (rank, its management address and its fabric view) from the topology's host
    variables."""
    address = next((n.get("address") for n in values.get("spark_nodes") or [] if n.get("rank") == int(rank)), None)
    return {"rank": int(rank), "address": address, "peer_hcas": values.get("spark_peer_hcas"),
            "hcas": values.get("spark_nccl_hcas"), "gid_index": values.get("spark_gid_index")}


def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def shape_key(shape, nodes, context, kv_bytes):
    """What a reshape changes: nodes, tensor parallelism, context, KV, sequences, batch."""
    return "%s tp%d ctx%d kv%d seqs%d tokens%d" % (
        shape["name"], nodes, context, kv_bytes, shape["max_seqs"], shape["batched_tokens"])


def effective_entrypoint(recipe):
    """What the container runs before the rendered arguments: the recipe's override, else the image's own."""
    return list(recipe.get("entrypoint") or recipe.get("image_entrypoint") or [])


def check_entrypoint(recipe, args):
    """The recipe names the entrypoint its arguments are for, and its arguments do not say it again (an image whose
    ENTRYPOINT is `vllm serve` given `serve /models ...` runs `vllm serve serve /models` and exits)."""
    entrypoint = effective_entrypoint(recipe)
    if not entrypoint:
        raise LaunchError("serve_image_entrypoint: is empty and serve_entrypoint overrides nothing, so nothing says "
                          "what runs the rendered arguments. Fix: set serve_image_entrypoint to the image's "
                          "ENTRYPOINT (the vLLM OpenAI image's is [vllm, serve]).")
    words = {w.rsplit("/", 1)[-1] for w in entrypoint if not w.startswith("-")}
    for i, arg in enumerate(args):
        # a flag's value (--generation-config vllm) is not a repeated entrypoint
        follows_flag = i > 0 and args[i - 1].startswith("-") and "=" not in args[i - 1]
        if arg.rsplit("/", 1)[-1] in words and not follows_flag:
            raise LaunchError("serve_args[%d]: %r repeats the entrypoint %s, which already runs before the "
                              "arguments. Fix: remove it from serve_args." % (i, arg, " ".join(entrypoint)))


def check_recipe(recipe, engine, shape):
    """The recipe's fields, then the engine's own rules (its rendered flags, numeric ranges, memory rules)."""
    args = recipe.get("args") or []
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            raise LaunchError("serve_args[%d]: %r is not a string. Fix: quote it." % (i, arg))
    check_entrypoint(recipe, args)
    for key in ("image", "container_name", "model_dir", "model_mount"):
        if not recipe.get(key):
            raise LaunchError("serve_%s: is empty. Fix: set it in group_vars/all/serve.yml." % key)
    if not recipe.get("served_names"):
        raise LaunchError("serve_served_names: is empty. Fix: list at least one served model name.")
    engine.check(recipe, shape, effective_sizing(recipe, shape)[0])


def program_args(spec):
    """What the entrypoint's program receives: its own arguments (``serve`` of ``vllm serve``), then the rendered
    ones; the argument list vLLM's parser judges."""
    entrypoint = list(spec.get("entrypoint") or spec.get("image_entrypoint") or [])
    return entrypoint[1:] + list(spec["command"])


def effective_sizing(recipe, shape):
    context = recipe.get("max_model_len") or shape["context"]
    if context > shape["context"]:
        raise LaunchError("serve_max_model_len: %d exceeds what %s holds (%d). Fix: lower it." % (
            context, shape["name"], shape["context"]))
    return context, recipe.get("kv_cache_bytes") or shape["kv_cache_bytes"]


def command(recipe, shape, node, cluster, extra=None):
    """The engine's arguments of one rank (what follows the image's entrypoint), the shape's own last."""
    return engines.get(recipe.get("engine")).command(recipe, shape, node, cluster, *effective_sizing(recipe, shape),
                                                     shape_args=list((extra or {}).get("args") or []))


def shape_launch(recipe, shape):
    """This shape's entry of serve_shape_launch (its qualified run's devices, cpuset and env), checked."""
    table = recipe.get("shape_launch") or {}
    if not isinstance(table, dict):
        raise LaunchError("serve_shape_launch: must map shape names to launch details. Fix: write "
                          "{tp4-ring: {cpuset: ...}} or {} for none.")
    extra = table.get(shape["name"]) or {}
    for key in sorted(extra):
        if key not in SHAPE_LAUNCH_KEYS:
            raise LaunchError("serve_shape_launch.%s.%s: is not a launch detail. Fix: use %s." % (
                shape["name"], key, ", ".join(SHAPE_LAUNCH_KEYS)))
    for i, bind in enumerate(extra.get("device_binds") or []):
        if not isinstance(bind, dict) or sorted(bind) != ["source", "target"] or any(
                not str(v).startswith("/") or "," in str(v) for v in bind.values()):
            raise LaunchError("serve_shape_launch.%s.device_binds[%d]: %r is not {source, target} absolute paths "
                              "without commas. Fix: write {source: /dev/dri/by-path/...-card, target: "
                              "/dev/dri/card0}." % (shape["name"], i, bind))
    args = extra.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise LaunchError("serve_shape_launch.%s.args: must be a list of strings. Fix: quote each flag and value."
                          % shape["name"])
    recipe_flags = {a.split("=", 1)[0] for a in recipe.get("args") or [] if a.startswith("-")}
    rendered = engines.get(recipe.get("engine")).RENDERED_FLAGS
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in recipe_flags or name in rendered:
            raise LaunchError("serve_shape_launch.%s.args[%d]: %s is %s. Fix: remove it here." % (
                shape["name"], i, name, "also in serve_args" if name in recipe_flags else
                "rendered from the shape, node or recipe fields"))
    for key in sorted(extra.get("env") or {}):
        if key in (recipe.get("env") or {}):
            raise LaunchError("serve_shape_launch.%s.env.%s: is also set in serve_env. Fix: set it in one of "
                              "them." % (shape["name"], key))
    return extra


def environment(recipe, shape, node, cluster, extra):
    """The container's own env: the recipe's, the shape's launch env, the engine's settings of this rank (SGLang's
    boot reads its arguments from them) and the engine's fabric env (from the topology: sparknet's routing for
    vLLM, RoCEnante's HCAs for SGLang)."""
    engine = engines.get(recipe.get("engine"))
    env = {str(k): str(v) for k, v in (recipe.get("env") or {}).items()}
    env.update({str(k): str(v) for k, v in (extra.get("env") or {}).items()})
    env.update(engine.rank_env(recipe, shape, node, cluster, effective_sizing(recipe, shape)[0],
                               list(extra.get("args") or [])))
    env.update(engine.fabric_env(recipe, shape, node, cluster))
    return dict(sorted(env.items()))


def render(recipe, shape, node, cluster):
    """The launch spec of one rank.

    ``recipe``: the serve_* values without the prefix (RECIPE_KEYS); ``shape``: spark_shape;
    ``node``: {rank, peer_hcas, hcas, gid_index} (``node_from_vars``); ``cluster``: {nodes: count, head_address}.
    """
    recipe = {k: recipe.get(k) for k in RECIPE_KEYS}
    engine = engines.get(recipe["engine"])
    check_recipe(recipe, engine, shape)
    extra = shape_launch(recipe, shape)
    # A vLLM spec stays as it was before engines were a choice: running containers' labels still match it.
    plain = {k: v for k, v in recipe.items() if k not in NOT_VLLM_KEYS} if engine.NAME == engines.DEFAULT else recipe
    key = engine.api_key(recipe, node) or {}
    cluster_inputs = {"recipe": plain, "shape": shape, "cluster": cluster}
    env = environment(recipe, shape, node, cluster, extra)
    spec = {
        "name": recipe["container_name"],
        "image": recipe["image"],
        "rank": node["rank"],
        "head": node["rank"] == 0,
        "entrypoint": list(recipe.get("entrypoint") or []),
        "image_entrypoint": list(recipe.get("image_entrypoint") or []),
        "command": engine.attach(command(recipe, shape, node, cluster, extra), env),
        "env": env,
        "env_files": list(recipe.get("env_files") or []),
        "mounts": list(recipe.get("mounts") or []) + list(key.get("mounts") or []),
        "devices": list(recipe.get("devices") or []),
        "device_binds": [dict(b) for b in extra.get("device_binds") or []],
        "device_cgroup_rules": list(extra.get("device_cgroup_rules") or []),
        "gpus": recipe.get("gpus") or "",
        "cap_add": list(recipe.get("cap_add") or []),
        "security_opt": list(recipe.get("security_opt") or []),
        "ulimits": list(recipe.get("ulimits") or []),
        "shm_size": recipe.get("shm_size") or "",
        "memory": recipe.get("memory") or "",
        "cpuset": recipe.get("cpuset") or extra.get("cpuset") or "",
        "port": recipe["port"],
        "served_names": list(recipe["served_names"]),
    }
    if engine.NAME != engines.DEFAULT:
        spec["engine"] = engine.NAME
        spec["privileged"] = bool(recipe.get("privileged"))  # the SGLang launcher's containers are privileged
    if key:
        spec["api_key_config"] = key["config"]  # the head's file the serve stage writes from its key file
    spec["labels"] = {
        LABEL + ".release": str(recipe["release"]),
        LABEL + ".recipe": digest(cluster_inputs),
        LABEL + ".shape": shape_key(shape, cluster["nodes"], *effective_sizing(recipe, shape)),
        LABEL + ".rank": str(node["rank"]),
    }
    spec["labels"][LABEL + ".spec"] = digest(spec)
    return spec


def docker_run(spec, image=None, api_key_file=None):
    """``docker run`` argv for a spec (``image`` may pin an image ID instead of the spec's tag); the head's key
    file goes in as ``--env-file`` for an engine that reads its key from the environment (vLLM)."""
    argv = ["docker", "run", "-d", "--name", spec["name"], "--network", "host", "--ipc", "host",
            "--restart", "no", "--stop-timeout", "60"]
    if spec.get("privileged"):
        argv.append("--privileged")
    if spec["gpus"]:
        argv += ["--gpus", spec["gpus"]]
    for device in spec["devices"]:
        argv += ["--device", device]
    for bind in spec.get("device_binds") or []:  # --mount: a by-path device name holds colons (-v splits on them)
        argv += ["--mount", "type=bind,source=%s,target=%s" % (bind["source"], bind["target"])]
    for rule in spec.get("device_cgroup_rules") or []:
        argv += ["--device-cgroup-rule", rule]
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
    key_env_file = api_key_file and engines.get(spec.get("engine")).API_KEY_ENV_FILE
    for env_file in spec["env_files"] + ([api_key_file] if key_env_file else []):
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



# What `docker update` can change in a running container (its flag for each), and Docker's value when `docker run`
# did not set it: a container whose settings were changed in place no longer runs its spec, whatever its labels say.
UPDATE_FLAGS = {"RestartPolicy": "--restart", "Memory": "--memory", "MemorySwap": "--memory-swap",
                "CpusetCpus": "--cpuset-cpus", "CpuShares": "--cpu-shares", "NanoCpus": "--cpus",
                "CpuPeriod": "--cpu-period", "CpuQuota": "--cpu-quota", "CpuRealtimePeriod": "--cpu-rt-period",
                "CpuRealtimeRuntime": "--cpu-rt-runtime", "CpusetMems": "--cpuset-mems",
                "BlkioWeight": "--blkio-weight", "MemoryReservation": "--memory-reservation",
                "PidsLimit": "--pids-limit"}
UPDATABLE_DEFAULTS = {"CpuShares": 0, "NanoCpus": 0, "CpuPeriod": 0, "CpuQuota": 0, "CpuRealtimePeriod": 0,
                      "CpuRealtimeRuntime": 0, "CpusetMems": "", "BlkioWeight": 0, "MemoryReservation": 0,
                      "PidsLimit": 0}
_DOCKER_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def update_command(name, key, value):
    """The `docker update` that puts one setting back (no restart), or None where only a new container can: Docker
    reads 0 or an empty value as "leave it as it is" (seen: --cpu-shares=0 left 512 in place)."""
    flag = UPDATE_FLAGS.get(key)
    if flag is None or (value in (0, "", None) and key != "RestartPolicy"):
        return None
    if key == "NanoCpus":
        value = value / 1e9
    return "docker update %s=%s %s" % (flag, value if value != "" else '""', name)


def docker_bytes(size):
    """A Docker size (``112g``) in bytes; 0 for none."""
    if not size:
        return 0
    text = str(size).lower()
    return int(text[:-1]) * _DOCKER_UNITS[text[-1]] if text[-1] in _DOCKER_UNITS else int(text)


def host_config(spec):
    """The settings of ``docker inspect``'s HostConfig that ``docker_run(spec)`` decides, as Docker reports them:
    the doctor compares a running container's with these (what a `docker update` or a hand-made container would
    change)."""
    memory = docker_bytes(spec.get("memory"))
    out = dict(UPDATABLE_DEFAULTS, NetworkMode="host", IpcMode="host", RestartPolicy="no",
               Privileged=bool(spec.get("privileged")),
               Memory=memory, MemorySwap=memory, CpusetCpus=spec.get("cpuset") or "",
               ShmSize=docker_bytes(spec.get("shm_size")) or 64 << 20,  # Docker's own 64 MiB when not given
               # Docker adds label=disable itself to a container of the host's IPC namespace
               CapAdd=sorted(spec.get("cap_add") or []),
               SecurityOpt=sorted(set(spec.get("security_opt") or []) | {"label=disable"}),
               Ulimits=sorted(_ulimit(u) for u in spec.get("ulimits") or []),
               Devices=sorted(_device(d) for d in spec.get("devices") or []),
               DeviceCgroupRules=sorted(spec.get("device_cgroup_rules") or []))
    return out


def _ulimit(text):
    """``--ulimit name=soft[:hard]`` as Docker records it (one value is both)."""
    name, _, values = str(text).partition("=")
    return "%s=%s" % (name, values if ":" in values else "%s:%s" % (values, values))


def _device(text):
    """``--device`` as Docker records it: host path, container path, permissions (rwm by default)."""
    parts = str(text).split(":")
    host = parts[0]
    inside = parts[1] if len(parts) > 1 else host
    return "%s:%s:%s" % (host, inside, parts[2] if len(parts) > 2 else "rwm")
