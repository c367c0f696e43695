# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Read a node's serving state through the docker CLI and systemd: the engine container, its backup from a
replace, the recipe's image, the memory guard. Read-only; shared by the serve modules."""

from __future__ import annotations

import json
import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import redaction

BACKUP_SUFFIX = "-replaced"
# What a module returns never holds a secret: the redaction rules live in redaction.py (stdlib only, so `ds41f logs
# --follow` runs the same file on a node), and are named here too for the modules that read the engine.
REDACTED, SECRET_WORDS, is_secret = redaction.REDACTED, redaction.SECRET_WORDS, redaction.is_secret
redact_env, redact_text = redaction.redact_env, redaction.redact_text


def api_key(path):
    """The key an API key file (``VLLM_API_KEY=<key>``, the serve stage's) holds, or None: no path, no file, no key
    (a line edited around the key still gives it: the file's own drift is the key file's row, not a refusal here).
    Read on the node by the modules that call the API, so the key never travels as an argument."""
    if not path:
        return None
    try:
        with open(path) as handle:
            found = re.search(r"VLLM_API_KEY=(.*)", handle.read())
    except OSError:
        return None
    return (found.group(1).strip() or None) if found else None


def docker_json(run, *args):
    """(parsed JSON list or None, error text). ``run`` is module.run_command."""
    rc, out, err = run(["docker"] + list(args))
    if rc != 0:
        return None, (err or out).strip()
    try:
        return json.loads(out), ""
    except ValueError:
        return None, "unparsable docker output"


def container(run, name):
    """The container's state, or None when there is none of that name."""
    data, _ = docker_json(run, "container", "inspect", name)
    if not data:
        return None
    item = data[0]
    state = item.get("State") or {}
    config = item.get("Config") or {}
    return {
        "name": name,
        "id": item.get("Id"),
        "image_id": item.get("Image"),
        "image": config.get("Image"),
        "status": state.get("Status"),
        "running": bool(state.get("Running")),
        "exit_code": state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
        "started_at": state.get("StartedAt"),
        "finished_at": state.get("FinishedAt"),
        "labels": config.get("Labels") or {},
        "cmd": config.get("Cmd") or [],
        "env": redact_env(config.get("Env")),
        "binds": (item.get("HostConfig") or {}).get("Binds") or [],
    }


def image_id(run, image):
    data, _ = docker_json(run, "image", "inspect", image)
    return data[0].get("Id") if data else None


def unit_state(run, unit):
    rc, out, _ = run(["systemctl", "show", unit, "--property=ActiveState,SubState,Result,MainPID"])
    if rc != 0:
        return {"active": "unknown"}
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return {"active": props.get("ActiveState", "unknown"), "sub": props.get("SubState"),
            "result": props.get("Result"), "pid": int(props.get("MainPID") or 0)}


def docker_ok(run):
    rc, out, err = run(["docker", "version", "--format", "{{.Server.Version}}"])
    return rc == 0, (out if rc == 0 else err).strip()
