# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_adopt
short_description: Put a prebuilt image - pinned by image ID, and by digest when pulled - on this node
version_added: 0.1.0
description:
  - The adopt way of the image stage, on the node the others receive the image from. A node that already holds
    O(image_id) is not touched.
  - Otherwise either C(docker load) of O(tarball) (a C(docker save) of the release image the stage copied here
    from the controller) or C(docker pull) of O(repository)C(@)O(digest) (the registry checks the manifest
    against the digest). Then the node must hold O(image_id), or the run fails naming what it got.
  - No tag is set here, and a tarball's own tags are not trusted; the stage's image_load sets the tag.
options:
  image_id:
    description: The image ID the recipe pins (image_adopt_id).
    type: str
    required: true
  tarball:
    description: The tarball on this node (mutually exclusive with O(repository)).
    type: path
  repository:
    description: The registry repository to pull from, without tag or digest (image_adopt_registry).
    type: str
  digest:
    description: The manifest digest the pull is pinned to (image_adopt_digest); required with O(repository).
    type: str
attributes:
  check_mode:
    support: full
    description: Says whether it would load or pull; touches nothing.
  diff_mode:
    support: full
    description: Shows the image ID on the node before and after.
  idempotent:
    support: full
    description: A node that holds the ID reports no change.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Pull the release by digest
  dgxspark.ds41f.image_adopt:
    image_id: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    repository: registry.site.example:5000/spark-ds41f
    digest: sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
"""

RETURN = r"""
found:
  description: Whether the node held the image ID before this run.
  returned: always
  type: bool
image_id:
  description: The image ID the node holds after the run (null in check mode before the first adopt).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_image
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


def main():
    module = AnsibleModule(argument_spec={
        "image_id": {"type": "str", "required": True},
        "tarball": {"type": "path"},
        "repository": {"type": "str"},
        "digest": {"type": "str"},
    }, mutually_exclusive=[("tarball", "repository")], required_one_of=[("tarball", "repository")],
        required_together=[("repository", "digest")], supports_check_mode=True)
    p = module.params
    run = module.run_command
    want = p["image_id"]
    plan = Plan(module)
    if docker_image.inspect(run, want) is not None:
        module.exit_json(**plan.result(found=True, image_id=want))
    if p["tarball"]:
        argv, what = ["docker", "load", "-i", p["tarball"]], "docker load -i %s" % p["tarball"]
        field = "image_adopt_tarball"
    else:
        ref = "%s@%s" % (p["repository"], p["digest"])
        argv, what, field = ["docker", "pull", "-q", ref], "docker pull %s" % ref, "image_adopt_registry"

    def apply():
        rc, out, err = run(argv)
        if rc != 0:
            module.fail_json(msg="%s: %s failed: %s" % (field, what, (err or out).strip()))
        if docker_image.inspect(run, want) is None:
            got = out.strip().replace("\n", "; ")  # load: "Loaded image ID: ..."; pull -q: the reference
            if not p["tarball"]:
                got = (docker_image.inspect(run, ref) or {}).get("Id", got)
            module.fail_json(msg="image_adopt_id: %s gave %s, not %s. Fix: check that the %s is the release's, or "
                                 "correct image_adopt_id; nothing was tagged." % (
                                     what, got, want, "tarball" if p["tarball"] else "registry's digest"))

    plan.change("image %s" % docker_image.short(want), want, None, what, apply)
    module.exit_json(**plan.result(found=False, image_id=None if module.check_mode else want))


if __name__ == "__main__":
    main()
