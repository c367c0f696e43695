# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A rendered launch beside a recorded production launch, item by item.

Both sides become one flat mapping, item -> value:

- ``entrypoint``: what runs before the arguments (the image's ENTRYPOINT unless the launch overrides it);
- ``arg MODEL`` and ``arg --flag``: the engine's arguments (a switch has the value ``""``; JSON values compare by
  content, not key order);
- ``env NAME``: every variable the container gets, env files included;
- ``docker --flag`` (``docker --ulimit memlock``, ``docker --cap-add IPC_LOCK``): the container's settings;
- ``mount /target``: its mode (sources are site paths and are not compared);
- ``device /path``: a device and its permissions, or a device bind's source.

Values that only the site decides (its interface names, HCAs, GID slots, addresses) compare by presence: both sides
hold ``SITE``. ``differences`` lists every item whose value differs or that one side lacks (ds41f/release.py sets
them beside the reviewed list). Pure Python.
"""

from __future__ import annotations

import fnmatch
import json

SITE = "<site>"
# Values of the site, not of the release: compared by presence only.
SITE_ENV = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
            "SPARKNET_ROCE_GID_INDEX", "SPARKNET_ROCE_HCA", "SPARKNET_ROCE_PEER_HCAS", "SPARKNET_ROCE_TOPOLOGY",
            "VLLM_HOST_IP", "HOST_IP", "B12X_ROCE_HCA")
SITE_ARGS = ("--master-addr", "--dist-init-addr")
# docker run flags that take a value.
VALUED = ("--network", "--ipc", "--gpus", "--device", "--cap-add", "--ulimit", "--security-opt", "--shm-size",
          "--memory", "--memory-swap", "--cpuset-cpus", "--mount", "--device-cgroup-rule", "--env", "-e",
          "--env-file", "--volume", "-v", "--label", "--name", "--restart", "--stop-timeout", "--entrypoint")
# Repeatable flags whose value names the item: `--ulimit memlock=-1:-1` is item `docker --ulimit memlock`.
KEYED = {"--ulimit": "=", "--security-opt": "="}
LISTED = ("--cap-add", "--device-cgroup-rule")


def _json(value):
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return value
    return json.dumps(parsed, sort_keys=True, separators=(",", ":")) if isinstance(parsed, (dict, list)) else value


def docker_pairs(words):
    """(flag, value) of ``docker run`` words, ``--flag=value`` or ``--flag value``; a switch has value None."""
    pairs, i = [], 0
    while i < len(words):
        word = words[i]
        if "=" in word and word.startswith("--"):
            pairs.append(tuple(word.split("=", 1)))
        elif word in VALUED and i + 1 < len(words):
            pairs.append((word, words[i + 1]))
            i += 1
        else:
            pairs.append((word, None))
        i += 1
    return pairs


def env_pair(text):
    key, _, value = text.partition("=")
    return key, value


def container_items(pairs, env_files=None):
    """Items of a container's docker settings (no image, no command): flags, env (files first), mounts, devices."""
    items, env = {}, {}
    for flag, value in pairs:
        if flag in ("--env-file",):
            env.update((env_files or {}).get(value) or {})
    for flag, value in pairs:
        if flag in ("--env", "-e"):
            env.update([env_pair(value)])
        elif flag in ("--volume", "-v"):
            parts = value.split(":")
            items["mount %s" % parts[1]] = parts[2] if len(parts) > 2 else "rw"
        elif flag == "--device":
            parts = value.split(":")
            target = parts[1] if len(parts) > 1 else parts[0]
            items["device %s" % target] = parts[2] if len(parts) > 2 else "rwm"
        elif flag == "--mount":
            fields = dict(f.split("=", 1) for f in value.split(",") if "=" in f)
            items["device %s" % fields.get("target")] = "bind %s" % fields.get("source")
        elif flag in KEYED:
            key, _, rest = value.partition(KEYED[flag])
            items["docker %s %s" % (flag, key)] = rest
        elif flag in LISTED:
            items["docker %s %s" % (flag, value)] = ""
        elif flag in ("--label", "--env-file", "--entrypoint", "-d"):
            continue  # labels are the project's bookkeeping; env files are read above; the entrypoint is its own item
        else:
            items["docker %s" % flag] = "" if value is None else value
    for key, value in env.items():
        items["env %s" % key] = SITE if key in SITE_ENV else str(value)
    return items


def argument_items(argv):
    """Items of an engine's arguments: the positional model, then each flag with its values."""
    items, flag = {}, None
    for word in argv:
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            flag = name
            items["arg %s" % flag] = value if eq else ""
            if eq:
                flag = None
        elif flag is None:
            items["arg (model)"] = word
        else:
            key = "arg %s" % flag
            items[key] = (items[key] + " " + word).strip() if items[key] else _json(word)
    for name in SITE_ARGS:
        if "arg %s" % name in items:
            items["arg %s" % name] = SITE
    return items


def launch_items(entrypoint, argv, pairs, env_files=None):
    items = {"entrypoint": " ".join(entrypoint) if entrypoint else "(not recorded)"}
    items.update(container_items(pairs, env_files))
    items.update(argument_items(argv))
    return items


def rendered_items(argv, spec, env_files=None):
    """The items of ``docker run`` words (launch.docker_run) for ``spec``, with the env files' contents."""
    image_at = argv.index(spec["image"])
    override = list(spec.get("entrypoint") or [])
    # docker_run puts an override's own arguments after the image, before the rendered ones
    command = argv[image_at + 1 + max(len(override) - 1, 0):]
    return launch_items(override or list(spec.get("image_entrypoint") or []), command,
                        docker_pairs(argv[2:image_at]), env_files)


def apply(items, changes):
    """``items`` with recorded changes applied, in order: ``{item, value}`` sets (None removes; ``*`` in the item
    matches many), ``{rename_env_prefix: [old, new]}`` and ``{replace_in_values: [old, new]}``."""
    out = dict(items)
    for change in changes:
        if "rename_env_prefix" in change:
            old, new = change["rename_env_prefix"]
            out = {("env " + new + k[len("env " + old):] if k.startswith("env " + old) else k): v
                   for k, v in out.items()}
        elif "replace_in_values" in change:
            old, new = change["replace_in_values"]
            out = {k: v.replace(old, new) if isinstance(v, str) else v for k, v in out.items()}
        elif "*" in change["item"]:
            for key in fnmatch.filter(list(out), change["item"]):
                if change.get("value") is None:
                    del out[key]
        elif change.get("value") is None:
            out.pop(change["item"], None)
        else:
            value = str(change["value"])
            out[change["item"]] = SITE if change["item"] in ("env %s" % k for k in SITE_ENV) else _json(value)
    return out


def differences(recorded, rendered):
    """[{item, recorded, rendered}] for every item that differs (None: that side lacks it), sorted by item."""
    out = []
    for item in sorted(set(recorded) | set(rendered)):
        if recorded.get(item) != rendered.get(item):
            out.append({"item": item, "recorded": recorded.get(item), "rendered": rendered.get(item)})
    return out
