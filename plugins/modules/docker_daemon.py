# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: docker_daemon
short_description: The node's Docker engine answers, or a named error with its fix
version_added: 0.3.0
description:
  - Reads the Docker unit's state (C(systemctl show)) and pings the engine's API socket (C(GET /_ping)), unless
    the unit is stopped. A look at the socket of a stopped engine would start it (C(docker.socket)), and a read
    must change nothing.
  - When the engine does not answer, fails with a message naming the node and the fix ("docker is not running on
    dgx4 ... systemctl start docker") and one finding on the host baseline's row of the unit, so the doctor shows
    one row for it whichever stage met it. The image and serve stages run it before any Docker call.
  - With O(images), reads each of them from the engine in the same call (C(GET /images/{name}/json)), so a stage
    learns that Docker answers and what it holds under a tag or an ID in one round trip.
  - Changes nothing. The host baseline enables and starts the unit (O(unit) in C(host_baseline_container_units)).
options:
  node:
    description: The node's inventory name, for the message.
    type: str
    required: true
  unit:
    description: The engine's systemd unit.
    type: str
    default: docker.service
  socket:
    description: The engine's API socket.
    type: path
    default: /var/run/docker.sock
  timeout:
    description: Seconds the ping, and each image read, may take.
    type: float
    default: 5
  images:
    description: Image names (tags) or IDs to read once the engine answers; a name it does not hold is left out of
      RV(images).
    type: list
    elements: str
    default: []
  managed_images:
    description:
      - Tags the calling stage keeps on this node (the image stage's release tag). Read as O(images) are, after
        them, and declared as managed objects (RV(managed)). The doctor lists them, and its mutation test
        (C(tests/mutation/)) removes and moves each tag.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Only reads; the same in check mode.
  diff_mode:
    support: none
    description: Reads only, so there is nothing to diff.
  idempotent:
    support: full
    description: Changes nothing.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Docker answers on this node (before the image stage's Docker calls)
  dgxspark.ds41f.docker_daemon:
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
answering:
  description: Whether the engine answered its ping.
  returned: always
  type: bool
unit_state:
  description: The unit's C(UnitFileState, ActiveState).
  returned: always
  type: str
images:
  description: The images found under O(images), in that order (one per name found, as
    M(community.docker.docker_image_info) lists them), each with C(Id), C(RepoTags) and C(Config.Labels).
  returned: always
  type: list
  elements: dict
findings:
  description: The doctor's row when the engine does not answer (stage host_baseline, setting the unit).
  returned: always
  type: list
  elements: dict
managed:
  description: The objects O(managed_images) declares, each with C(kind) C(image) and its C(name).
  returned: when O(managed_images) is given
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_daemon
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

MODULE_SPEC = dict(argument_spec={
    "node": {"type": "str", "required": True},
    "unit": {"type": "str", "default": "docker.service"},
    "socket": {"type": "path", "default": "/var/run/docker.sock"},
    "timeout": {"type": "float", "default": 5},
    "images": {"type": "list", "elements": "str", "default": []},
    "managed_images": {"type": "list", "elements": "str", "default": []},
}, supports_check_mode=True)


def run(module):
    p = module.params
    state = docker_daemon.unit_state(module_host(module).run, p["unit"])
    answering, seen = docker_daemon.answers(state, p["socket"], p["timeout"])
    msg, findings = docker_daemon.verdict(p["node"], p["unit"], state, answering, seen)
    result = {"changed": False, "answering": answering, "unit_state": docker_daemon.describe(state),
              "findings": findings, "images": []}
    if p["managed_images"]:  # declared whether or not the engine answers: the object is the stage's either way
        result["managed"] = [{"kind": "image", "name": tag} for tag in p["managed_images"]]
    if msg:
        module.fail_json(msg=msg, **result)
    for ref in p["images"] + p["managed_images"]:
        try:
            found = docker_daemon.image(p["socket"], ref, p["timeout"])
        except (OSError, ValueError) as exc:
            module.fail_json(msg="%s: docker answers its ping but not a read of %s (%s). Fix: systemctl restart "
                                 "docker on %s" % (p["node"], ref, exc, p["node"]), **result)
        if found is not None:
            result["images"].append(found)
    module.exit_json(**result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
