# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A ``docker run`` of one rank as items, item by item beside another (the recorded production launch).

Both sides become one flat mapping, item -> value, of everything a ``docker run`` decides:

- ``image``: the reference as docker run is given it (a tag, a digest ``name@sha256:...`` or an image ID);
- ``entrypoint``: what runs before the arguments (the image's ENTRYPOINT unless ``--entrypoint`` overrides it);
- ``arg (positional)``: the arguments before the first flag, in order (a repeated one shows twice);
- ``arg --flag``: a flag's value (a switch has ``""``; JSON values compare by content, not key order);
- ``docker --flag`` (``docker --ulimit memlock``, ``docker --cap-add IPC_LOCK``, ``docker -d``): the container's
  settings, docker's default where a launch gives none (``--restart no``);
- ``env NAME``: every variable the container gets, env files included; a variable that carries engine arguments
  (``EXTRA_SGLANG_ARGS``) is taken apart like arguments: ``env EXTRA_SGLANG_ARGS --flag``;
- ``label KEY``: the container's labels;
- ``mount /target``: its source and mode; ``device /path``: its source and permissions.

A flag, variable or label given more than once shows every value and that the last one wins
(``2 | 1 (given 2 times: the last wins)``), so a repeat is a difference even where the last value agrees.
Values that only the site decides (its interface names, HCAs, GID slots, addresses) compare by presence: both
sides hold ``SITE``. ``differences`` lists every item whose value differs or that one side lacks. Pure Python.
"""

from __future__ import annotations

import json

SITE = "<site>"
# Values of the site, not of the release: compared by presence only.
SITE_ENV = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
            "SPARKNET_ROCE_GID_INDEX", "SPARKNET_ROCE_HCA", "SPARKNET_ROCE_PEER_HCAS", "SPARKNET_ROCE_TOPOLOGY",
            "VLLM_HOST_IP", "HOST_IP", "B12X_ROCE_HCA", "DIST_INIT_ADDR", "API_KEY")
SITE_ARGS = ("--master-addr", "--dist-init-addr")
# Variables whose value is a list of engine arguments (the SGLang launcher's; its image's boot appends them).
ARGS_ENV = ("EXTRA_SGLANG_ARGS",)
# docker run flags that take a value.
VALUED = ("--network", "--ipc", "--gpus", "--device", "--cap-add", "--ulimit", "--security-opt", "--shm-size",
          "--memory", "--memory-swap", "--cpuset-cpus", "--mount", "--device-cgroup-rule", "--env", "-e",
          "--env-file", "--volume", "-v", "--label", "-l", "--name", "--restart", "--stop-timeout", "--entrypoint")
SHORT = {"-e": "--env", "-v": "--volume", "-l": "--label"}
# Repeatable flags whose value names the item: `--ulimit memlock=-1:-1` is item `docker --ulimit memlock`.
KEYED = {"--ulimit": "=", "--security-opt": "="}
LISTED = ("--cap-add", "--device-cgroup-rule", "--env-file")
# What docker run decides when a launch names none (docker's documented defaults).
DOCKER_DEFAULTS = {"docker --restart": "no"}


def _json(value):
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return value
    return json.dumps(parsed, sort_keys=True, separators=(",", ":")) if isinstance(parsed, (dict, list)) else value


def docker_pairs(words):
    """(flag, value) of ``docker run`` words, ``--flag=value`` or ``--flag value`` (short forms as long ones);
    a switch has value None."""
    pairs, i = [], 0
    while i < len(words):
        word = words[i]
        if "=" in word and word.startswith("--"):
            flag, value = word.split("=", 1)
        elif word in VALUED and i + 1 < len(words):
            flag, value = word, words[i + 1]
            i += 1
        else:
            flag, value = word, None
        pairs.append((SHORT.get(flag, flag), value))
        i += 1
    return pairs


def env_pair(text):
    key, _, value = text.partition("=")
    return key, value


class Items(dict):
    """item -> value, keeping every use of an item: a second use shows all values and that the last wins."""

    def __init__(self):
        super().__init__()
        self.uses = {}

    def put(self, item, value):
        uses = self.uses.setdefault(item, [])
        uses.append(value)
        self[item] = value if len(uses) == 1 else "%s (given %d times: the last wins)" % (
            " | ".join(str(u) for u in uses), len(uses))


def _mount(value):
    """(target, 'source mode') of a --volume value: source:target[:options]."""
    parts = value.split(":")
    if len(parts) < 2:
        return parts[0], "(anonymous volume) rw"
    options = parts[2].split(",") if len(parts) > 2 else []
    return parts[1], "%s %s" % (parts[0], "ro" if "ro" in options else "rw")


def container_items(pairs, env_files=None):
    """Items of a container's docker settings (no image, no command): flags, env (files first, in order), labels,
    mounts, devices, and docker's defaults for what the launch leaves out."""
    items, env = Items(), Items()
    for flag, value in pairs:
        if flag == "--env-file":
            for key, val in ((env_files or {}).get(value) or {}).items():
                env.put(key, val)
    for flag, value in pairs:
        if flag == "--env":
            env.put(*env_pair(value))
        elif flag == "--volume":
            target, source = _mount(value)
            items.put("mount %s" % target, source)
        elif flag == "--device":
            parts = value.split(":")
            target = parts[1] if len(parts) > 1 else parts[0]
            items.put("device %s" % target, "%s %s" % (parts[0], parts[2] if len(parts) > 2 else "rwm"))
        elif flag == "--mount":
            fields = dict(f.split("=", 1) for f in value.split(",") if "=" in f)
            kind = "device" if fields.get("target", "").startswith("/dev/") else "mount"
            items.put("%s %s" % (kind, fields.get("target")), "%s %s%s" % (
                fields.get("type", "volume"), fields.get("source"), " ro" if "readonly" in value.split(",") else ""))
        elif flag in ("--label", "-l"):
            key, _, val = value.partition("=")
            items.put("label %s" % key, val)
        elif flag in KEYED:
            key, _, rest = value.partition(KEYED[flag])
            items.put("docker %s %s" % (flag, key), rest)
        elif flag in LISTED:
            items.put("docker %s %s" % (flag, value), "")
        elif flag == "--entrypoint":
            continue  # its own item, from the launch's words (launch_items)
        else:
            items.put("docker %s" % flag, "" if value is None else value)
    for key, value in DOCKER_DEFAULTS.items():
        items.setdefault(key, value)
    for key, value in env.items():
        if key in ARGS_ENV and len(env.uses[key]) == 1:
            items.update(argument_items(str(value).split(), "env %s " % key))
        else:
            items["env %s" % key] = SITE if key in SITE_ENV and value else str(value)
    return items


def argument_items(argv, prefix="arg "):
    """Items of an engine's arguments: the positional words, then each flag with its values."""
    items, flag, values, positional = Items(), None, None, []

    def close():
        if flag is not None:
            text = " ".join(values)
            items.put(prefix + flag, _json(text) if len(values) == 1 else text)

    for word in argv:
        if word.startswith("-"):
            close()
            name, eq, value = word.partition("=")
            flag, values = name, [value] if eq else []
        elif flag is None:
            positional.append(word)
        else:
            values.append(word)
    close()
    if positional:
        items[prefix + "(positional)"] = " ".join(positional)
    for name in SITE_ARGS:
        if prefix + name in items:
            items[prefix + name] = SITE
    return items


def launch_items(entrypoint, argv, pairs, image, env_files=None):
    """Every item of one launch: the image reference, the entrypoint, the container's settings, the arguments."""
    items = {"image": image, "entrypoint": " ".join(entrypoint) if entrypoint else "(not recorded)"}
    items.update(container_items(pairs, env_files))
    items.update(argument_items(argv))
    return items


def run_items(words, image_entrypoint, env_files=None):
    """The items of ``docker run`` words as docker reads them: its flags up to the image, the image, then the
    command (after an ``--entrypoint`` override, the command follows it; else the image's ENTRYPOINT runs it)."""
    words = list(words)
    if words[:2] == ["docker", "run"]:
        words = words[2:]
    pairs, i = [], 0
    while i < len(words) and words[i].startswith("-"):
        pairs.extend(docker_pairs(words[i:i + (2 if words[i] in VALUED else 1)]))
        i += 2 if words[i] in VALUED else 1
    image, command = words[i], words[i + 1:]
    override = [v for f, v in pairs if f == "--entrypoint"]
    entrypoint = [override[-1]] if override else list(image_entrypoint or [])
    return launch_items(entrypoint, command, pairs, image, env_files)


def differences(recorded, rendered):
    """[{item, recorded, rendered}] for every item that differs (None: that side lacks it), sorted by item."""
    out = []
    for item in sorted(set(recorded) | set(rendered)):
        if recorded.get(item) != rendered.get(item):
            out.append({"item": item, "recorded": recorded.get(item), "rendered": rendered.get(item)})
    return out
