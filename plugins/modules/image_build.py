# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_build
short_description: Build the locked image on this node, smoke-test it, and only then tag it
version_added: 0.1.0
description:
  - Reads the tag first. If it exists with this lock's input hash (label C(ds41f.input-hash)), the image
    is built and nothing happens.
  - Else, if an image built from this lock is still here (its label names this input hash) and O(shipped_ids)
    names it, that image is the build. Its ID is returned and nothing is built or tagged. The tag was removed or
    moved by hand, and the image stage's ship step gives it back (a rebuild would give another ID). Only a
    shipped image counts, because one whose smoke test failed, or whose build was cut short, carries the label
    too.
  - Else, if the tag exists with another hash, the module refuses - a tag is never overwritten with different
    content; release under a new tag instead.
  - Otherwise checks out every source at its pinned commit, applies its patch series in order with
    C(git apply --index), and requires the resulting git tree to be the lock's; a patch that does not
    apply, or a tree that differs, stops the build naming the source and the patch.
  - Sizes the parallel compile jobs from the node's available memory (O(build)), builds with the base as
    build argument C(BASE) and the job count as C(MAX_JOBS), labels the image with the input hash, the
    release, the base and every source's commit and tree, runs the lock's smoke command in it, and tags
    it only when the smoke test passes.
options:
  image:
    description: The name:tag to produce.
    type: str
    required: true
  input_hash:
    description: The lock's input hash (dgxspark.ds41f.image_lock).
    type: str
    required: true
  labels:
    description: Labels the image carries.
    type: dict
    required: true
  context:
    description:
      - The build folder on this node, holding the lock's Dockerfile and patches.
      - Sources are checked out under C(src/).
    type: path
    required: true
  dockerfile:
    description: The Dockerfile, relative to O(context).
    type: str
    default: Dockerfile
  sources:
    description: The lock's sources (name, url, commit, tree, patches relative to O(context)).
    type: list
    elements: dict
    required: true
  base:
    description: The base image (ID or digest reference), passed as build argument C(BASE).
    type: str
    required: true
  build:
    description: Job sizing - memory_per_job_gib, reserve_gib, max_jobs, min_available_gib.
    type: dict
    required: true
  smoke:
    description: The command run in the new image before it is tagged.
    type: list
    elements: str
    required: true
  smoke_run_args:
    description: Extra C(docker run) arguments for the smoke test (C(--gpus all) on a Spark).
    type: list
    elements: str
    default: []
  shipped_ids:
    description: The image IDs the other nodes' release tags name (each passed its smoke test here before it was
      shipped).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Reports whether it would build; checks out and builds nothing.
  diff_mode:
    support: full
    description: Shows the tag's input hash before and after.
  idempotent:
    support: full
    description:
      - The tag's input-hash label decides; a built image is never rebuilt.
      - Two builds of one Dockerfile give different IDs, so images are shipped, not rebuilt.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Build the release image on the head
  dgxspark.ds41f.image_build:
    image: "{{ lock.image }}"
    input_hash: "{{ lock.input_hash }}"
    labels: "{{ lock.labels }}"
    context: /var/lib/ds41f/build/0123456789abcdef
    sources: "{{ lock.sources }}"
    base: "{{ base.image_id }}"
    build: "{{ lock.build }}"
    smoke: "{{ lock.smoke }}"
"""

RETURN = r"""
image_id:
  description: The image's ID (null in check mode before the build).
  returned: always
  type: str
untagged:
  description: Whether the image is an earlier build of this lock that the tag no longer names.
  returned: always
  type: bool
jobs:
  description: The parallel job count the build used, and why.
  returned: when built
  type: str
smoke_output:
  description: The smoke command's output.
  returned: when built
  type: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_image, lockfile, sources
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

HASH_LABEL = "%s.input-hash" % lockfile.LABEL


def mem_available(text):
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def main():
    module = AnsibleModule(argument_spec={
        "image": {"type": "str", "required": True},
        "input_hash": {"type": "str", "required": True},
        "labels": {"type": "dict", "required": True},
        "context": {"type": "path", "required": True},
        "dockerfile": {"type": "str", "default": "Dockerfile"},
        "sources": {"type": "list", "elements": "dict", "required": True},
        "base": {"type": "str", "required": True},
        "build": {"type": "dict", "required": True},
        "smoke": {"type": "list", "elements": "str", "required": True},
        "smoke_run_args": {"type": "list", "elements": "str", "default": []},
        "shipped_ids": {"type": "list", "elements": "str", "default": []},
    }, supports_check_mode=True)
    p = module.params
    run = module.run_command
    plan = Plan(module)
    info = docker_image.inspect(run, p["image"])
    found = docker_image.labels(info).get(HASH_LABEL) if info else None
    if info and found == p["input_hash"]:
        module.exit_json(**plan.result(image_id=info["Id"], untagged=False))
    built = [i for i in docker_image.labelled(run, HASH_LABEL, p["input_hash"]) if i in p["shipped_ids"]]
    if built:  # the tag lost (removed, or moved to another image): the ship step tags this build again
        module.exit_json(**plan.result(image_id=built[0], untagged=True))
    if info:
        fix = ("give the new build its own tag (the lock's image), or remove the old image after checking nothing "
               "runs it")
        module.fail_json(msg="%s already exists with input hash %s, not this lock's %s. A tag is never overwritten "
                             "with different content. Fix: %s." % (
                                 p["image"], found or "(none: not built from a lock)", p["input_hash"], fix),
                         drift=[{"setting": "image %s" % p["image"], "expected": "input hash %s" % p["input_hash"],
                                 "found": "%s, input hash %s" % (docker_image.short(info["Id"]), found or "none"),
                                 "fix": fix}])
    plan.change("image %s" % p["image"], "input hash %s" % p["input_hash"], None,
                "build %s from %d sources on %s" % (p["image"], len(p["sources"]), p["base"]))
    if module.check_mode:
        module.exit_json(**plan.result(image_id=None, untagged=False))

    with open("/proc/meminfo") as handle:
        jobs, why = lockfile.build_jobs(mem_available(handle.read()), os.cpu_count() or 1, p["build"])
    if jobs == 0:
        module.fail_json(msg="not enough memory to build here: %s. Fix: stop what uses the memory (the serving "
                             "engine?) or build on another node (image_build_node)." % why)
    done = []
    for source in p["sources"]:
        try:
            done += sources.prepare(lambda argv, cwd: run(argv, cwd=cwd),
                                    os.path.join(p["context"], "src", source["name"]), source, p["context"])
        except sources.SourceError as exc:
            module.fail_json(msg=str(exc))
    with open(os.path.join(p["context"], ".dockerignore"), "w") as handle:
        handle.write("**/.git\npatches\n")
    iidfile = os.path.join(p["context"], ".image-id")
    argv = ["docker", "build", "--iidfile", iidfile, "-f", os.path.join(p["context"], p["dockerfile"]),
            "--build-arg", "BASE=%s" % p["base"], "--build-arg", "MAX_JOBS=%d" % jobs]
    for key, value in sorted(p["labels"].items()):
        argv += ["--label", "%s=%s" % (key, value)]
    start = time.monotonic()
    rc, out, err = run(argv + [p["context"]], environ_update={"DOCKER_BUILDKIT": "0"})
    if rc != 0:
        module.fail_json(msg="docker build failed (%d): %s" % (rc, (err or out).strip()[-3000:]))
    with open(iidfile) as handle:
        image_id = handle.read().strip()
    # The smoke command replaces the image's ENTRYPOINT (the vLLM base's is `vllm serve`, which would take the
    # command as its arguments).
    rc, smoke_out, smoke_err = run(["docker", "run", "--rm", "--network", "none", "--entrypoint", p["smoke"][0],
                                    *p["smoke_run_args"], image_id, *p["smoke"][1:]])
    if rc != 0:
        module.fail_json(msg="the smoke command %s failed in the new image %s (%d); it is left untagged: %s" % (
            p["smoke"], docker_image.short(image_id), rc, (smoke_err or smoke_out).strip()[-2000:]))
    rc, _, err = run(["docker", "tag", image_id, p["image"]])
    if rc != 0:
        module.fail_json(msg="docker tag %s %s failed: %s" % (image_id, p["image"], err.strip()))
    module.exit_json(**plan.result(image_id=image_id, untagged=False, jobs=why, smoke_output=smoke_out.strip(),
                                   prepared=done, seconds=round(time.monotonic() - start, 1)))


if __name__ == "__main__":
    main()
