# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_facts
short_description: Read a node's serving state (engine container, image, memory guard, ports, model)
version_added: 0.1.0
description:
  - Reads, through the docker CLI and systemd, the engine container of this node (state, image ID, labels,
    command), a container kept aside by a replace, the image ID of the recipe's image, the memory guard unit
    and its last sample, the node's ephemeral port range and whether the model folder holds a checkpoint.
  - Returns them as the fact C(ds41f_serve); the serve stage's preflight compares them across nodes.
  - Also returns the fact C(ds41f_node) (what M(dgxspark.ds41f.node_facts) reads), so the stage reads a node once.
  - Changes nothing.
options:
  container:
    description: The engine container's name.
    type: str
    required: true
  image:
    description: The image the recipe serves (a tag or an image ID).
    type: str
    required: true
  guard_unit:
    description: The memory guard's systemd unit.
    type: str
    default: ds41f-memguard.service
  guard_state_file:
    description: Where the guard writes its last sample.
    type: path
    default: /run/ds41f/memguard.json
  model_dir:
    description: The checkpoint folder on this node.
    type: path
    required: true
  model_info:
    description:
      - The file the model stage writes once every node's copy passed its manifest check
        (C(/etc/ds41f/model.json)); the checkpoint counts as verified when it names O(model_dir).
      - Empty to require only a C(config.json) in O(model_dir) (the lab's tiny model).
    type: str
    default: /etc/ds41f/model.json
  env_files:
    description: Env files the container will read; a missing one is reported.
    type: list
    elements: path
    default: []
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the serving state
  dgxspark.ds41f.serve_facts:
    container: spark-ds41f
    image: spark-ds41f:spark-ds41f-1030
    model_dir: /var/lib/ds41f/models/DeepSeek-V4.1-Flash-1017
"""

RETURN = r"""
ansible_facts:
  description: Facts to add.
  returned: always
  type: dict
  contains:
    ds41f_serve:
      description: The readings.
      type: dict
      sample:
        docker: {ok: true, version: "26.1.5"}
        container: {name: spark-ds41f, running: true, image_id: "sha256:4f1c...", labels: {ds41f.release: lab-r1}}
        backup: null
        image_id: "sha256:4f1c..."
        guard: {active: active, sub: running, state: {phase: steady, threshold_gib: 3, samples: 120}}
        ephemeral_ports: [32768, 60999]
        model: {dir: /var/lib/ds41f/models/x, config: true, verified: true, info: /etc/ds41f/model.json}
        env_files_missing: []
    ds41f_node:
      description: What kind of node this is, as M(dgxspark.ds41f.node_facts) returns it (read in this call).
      type: dict
      sample: {kernel: 6.18.44-fc-v669, page_size: 4096, container: podman, dgx_spark: false, driver: null}
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_daemon, engine_state
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host


def read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low, high = handle.read().split()[:2]
        return [int(low), int(high)]
    except (OSError, ValueError):
        return None


def model_state(model_dir, info_path):
    has_config = os.path.isfile(os.path.join(model_dir, "config.json"))
    state = {"dir": model_dir, "config": has_config, "info": info_path, "verified": has_config}
    if info_path:
        info = read_json(info_path) or {}
        state["info_path"] = info.get("path")
        state["verified"] = has_config and os.path.normpath(info.get("path") or "") == os.path.normpath(model_dir)
    return state


MODULE_SPEC = dict(argument_spec={
    "container": {"type": "str", "required": True},
    "image": {"type": "str", "required": True},
    "guard_unit": {"type": "str", "default": "ds41f-memguard.service"},
    "guard_state_file": {"type": "path", "default": "/run/ds41f/memguard.json"},
    "model_dir": {"type": "path", "required": True},
    "model_info": {"type": "str", "default": "/etc/ds41f/model.json"},
    "env_files": {"type": "list", "elements": "path", "default": []},
}, supports_check_mode=True)


def run(module):
    p = module.params
    run = module.run_command
    if module.get_bin_path("docker") is None:
        module.fail_json(msg="docker is not installed on %s. Fix: install Docker with the NVIDIA runtime "
                             "(host_baseline stage)." % os.uname()[1])
    # Not asked when its unit is stopped (a look would start it through docker.socket): the stage's docker_daemon
    # step before this one names it.
    why = docker_daemon.stopped(docker_daemon.unit_state(module_host(module).run))
    ok, version = (False, why) if why else engine_state.docker_ok(run)
    guard = engine_state.unit_state(run, p["guard_unit"])
    guard["state"] = read_json(p["guard_state_file"])
    facts = {
        "docker": {"ok": ok, "version": version},
        "container": engine_state.container(run, p["container"]) if ok else None,
        "backup": engine_state.container(run, p["container"] + engine_state.BACKUP_SUFFIX) if ok else None,
        "image": p["image"],
        "image_id": engine_state.image_id(run, p["image"]) if ok else None,
        "guard": guard,
        "ephemeral_ports": ephemeral_ports(),
        "model": model_state(p["model_dir"], p["model_info"]),
        "env_files_missing": [f for f in p["env_files"] if not os.path.isfile(f)],
    }
    # The node's kind in the same call: the serve stage reads each node once.
    module.exit_json(changed=False, ansible_facts={"ds41f_serve": facts,
                                                   "ds41f_node": platform.summary(module_host(module))})


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
