# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_load
short_description: Give this node the built image - the same image ID - streamed from its parent
version_added: 0.1.0
description:
  - Compares this node's O(image) tag with the image ID the build node holds. A node whose tag already
    names that ID is not touched.
  - A node that holds the ID under no tag (or under the tag of another image) only gets the tag moved; a
    node that lacks the ID receives C(docker save) of it streamed from its parent's share
    (dgxspark.ds41f.node_share) straight into C(docker load) - no registry, no file on disk - and the
    ID is checked after the load. An image is shipped, never rebuilt; two builds of one Dockerfile give
    different IDs.
  - The tag of another image that is moved keeps that image (its ID is reported); nothing is deleted.
  - This is the ID comparison community.docker.docker_image_load cannot make (it has no check mode and
    no idempotence).
options:
  image:
    description: The name:tag.
    type: str
    required: true
  image_id:
    description: The ID every node must hold; null in check mode while the build node has not built it.
    type: str
  parent:
    description: The node to receive from - C(name), C(addresses) (fabric), C(management_address).
    type: dict
  origin:
    description: What gives a node without O(parent) the ID (the build, or the adopted tarball or pull), for the plan.
    type: str
    default: the build node
  node:
    description: This node's name.
    type: str
    required: true
  port:
    description: The parent's share port.
    type: int
    default: 47111
  token:
    description: The run's share token.
    type: str
  allow_management:
    description: Fall back to the parent's management address when no fabric address answers.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for a relay to hold the image.
    type: int
    default: 3600
attributes:
  check_mode:
    support: full
    description: Says whether this node lacks the image, holds another ID, or needs only the tag; moves nothing.
  diff_mode:
    support: full
    description: Shows the ID the tag names before and after.
  idempotent:
    support: full
    description: A node whose tag names the expected ID reports no change.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Ship the image
  dgxspark.ds41f.image_load:
    image: ds41f-lab:lab-1
    image_id: sha256:0123...
    parent: {name: dgx1, addresses: [], management_address: 172.30.111.11}
    node: "{{ inventory_hostname }}"
    token: "{{ share_token }}"
"""

RETURN = r"""
found_id:
  description: The ID the tag named before this run (null when the tag was missing).
  returned: always
  type: str
received_bytes:
  description: Bytes of the docker save stream received.
  returned: always
  type: int
via:
  description: Which network carried the stream.
  returned: when loaded
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_image, transfer
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


def main():
    module = AnsibleModule(argument_spec={
        "image": {"type": "str", "required": True},
        "image_id": {"type": "str"},
        "parent": {"type": "dict"},
        "origin": {"type": "str", "default": "the build node"},
        "node": {"type": "str", "required": True},
        "port": {"type": "int", "default": 47111},
        "token": {"type": "str", "no_log": True},
        "allow_management": {"type": "bool", "default": True},
        "wait_timeout": {"type": "int", "default": 3600},
    }, supports_check_mode=True)
    p = module.params
    run = module.run_command
    want, parent = p["image_id"], p["parent"]
    plan = Plan(module)
    tagged = docker_image.inspect(run, p["image"])
    found = tagged["Id"] if tagged else None
    if want is not None and found == want:
        module.exit_json(**plan.result(found_id=found, received_bytes=0))
    present = want is not None and docker_image.inspect(run, want) is not None
    source = parent["name"] if parent else p["origin"]
    expected = want or "the ID %s builds" % source
    moved = " (it named %s, which is kept)" % docker_image.short(found) if found else ""
    tag = "tag it as %s%s" % (p["image"], moved)
    if present:
        action = tag
    elif parent:
        action = "load %s from %s (docker save | docker load) and %s" % (
            docker_image.short(want) or "the new build", source, tag)
    else:  # the build node: the build or the adopt step before this one gives it the ID
        action = "get %s from %s, then %s" % (docker_image.short(want) or "the new build", source, tag)
    plan.change("image %s" % p["image"], expected, found or "absent", action)
    if module.check_mode:
        module.exit_json(**plan.result(found_id=found, received_bytes=0))
    if want is None:
        module.fail_json(msg="no image ID to ship: the build node did not report one. Fix: run the image stage "
                             "without --check first.")
    received, via, start = 0, None, time.monotonic()
    if not present:
        if not parent:
            module.fail_json(msg="%s lacks %s and has no parent to receive it from." % (p["node"], want))
        try:
            peer = transfer.dial(parent["name"], parent.get("addresses") or [], parent.get("management_address"),
                                 p["port"], p["token"], p["node"], p["allow_management"])
            via = peer.via
            try:
                received = transfer.load_image(peer, want, p["token"], p["node"], wait_timeout=p["wait_timeout"])
            finally:
                transfer.done(peer, p["token"], p["node"])
        except transfer.TransferError as exc:
            module.fail_json(msg="%s: %s" % (p["node"], exc))
        if docker_image.inspect(run, want) is None:
            module.fail_json(msg="%s: docker load from %s finished but %s is not here: the stream and the build node "
                                 "disagree. Fix: re-run the image stage." % (p["node"], parent["name"], want))
    rc, _, err = run(["docker", "tag", want, p["image"]])
    if rc != 0:
        module.fail_json(msg="docker tag %s %s failed: %s" % (want, p["image"], err.strip()))
    module.exit_json(**plan.result(found_id=found, received_bytes=received, via=via,
                                   seconds=round(time.monotonic() - start, 3)))


if __name__ == "__main__":
    main()
