# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_base
short_description: Import a base image from a root filesystem tarball pinned by its sha256
version_added: 0.1.0
description:
  - For a lock whose base is a tarball (no registry - the lab's Debian minbase), checks the tarball's
    sha256 against the lock and imports it with C(docker import) under O(tag).
  - The imported image's only layer has the tarball's sha256 as its digest, so an existing O(tag) whose
    layer is that digest is the pinned base and is left alone; a tag holding anything else is refused.
  - Bases pinned by registry digest are pulled with community.docker.docker_image_pull instead.
options:
  tarball:
    description: The root filesystem tarball on this node.
    type: path
    required: true
  sha256:
    description: The tarball's sha256 the lock pins.
    type: str
    required: true
  tag:
    description: The local name the base gets.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reports the import it would make; in check mode the tarball is not read.
  diff_mode:
    support: full
    description: Shows the tag's layer before and after.
  idempotent:
    support: full
    description: A tag that already holds the pinned layer is not touched.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Base image from the minbase tarball
  dgxspark.ds41f.image_base:
    tarball: /opt/ds41f-lab/minbase/bookworm.tar
    sha256: f0c4d088bec6eb388d73691e5d99277a7492503feb3fad2c69cbcc3e36853581
    tag: ds41f-base:f0c4d088bec6
"""

RETURN = r"""
image_id:
  description: The base image's ID (null in check mode before the first import).
  returned: always
  type: str
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_image
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main():
    module = AnsibleModule(argument_spec={
        "tarball": {"type": "path", "required": True},
        "sha256": {"type": "str", "required": True},
        "tag": {"type": "str", "required": True},
    }, supports_check_mode=True)
    p = module.params
    run = module.run_command
    layer = "sha256:" + p["sha256"]
    plan = Plan(module)
    info = docker_image.inspect(run, p["tag"])
    have = (info or {}).get("RootFS", {}).get("Layers")
    if info and have == [layer]:
        module.exit_json(**plan.result(image_id=info["Id"]))
    if info:
        module.fail_json(msg="%s exists but is not the pinned base (layers %s, the lock pins %s). Fix: remove that "
                             "tag (docker rmi %s) after checking what uses it." % (p["tag"], have, layer, p["tag"]))
    if not os.path.isfile(p["tarball"]):
        module.fail_json(msg="the base tarball %s is not on this node. Fix: put it there (the lab: ds41f lab "
                             "image-inputs)." % p["tarball"])

    def apply():
        found = sha256(p["tarball"])
        if found != p["sha256"]:
            module.fail_json(msg="base.sha256: %s has sha256 %s, the lock pins %s. Fix: use the pinned tarball, or "
                                 "re-pin it after review." % (p["tarball"], found, p["sha256"]))
        rc, out, err = run(["docker", "import", p["tarball"], p["tag"]])
        if rc != 0:
            module.fail_json(msg="docker import %s failed: %s" % (p["tarball"], err.strip()))

    plan.change("base image %s" % p["tag"], layer, None, "import %s as %s" % (p["tarball"], p["tag"]), apply)
    info = None if module.check_mode else docker_image.inspect(run, p["tag"])
    module.exit_json(**plan.result(image_id=info["Id"] if info else None))


if __name__ == "__main__":
    main()
