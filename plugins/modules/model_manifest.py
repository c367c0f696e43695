# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_manifest
short_description: Make the checkpoint's manifest (file list, sizes, sha256) once, at the source
version_added: 0.1.0
description:
  - Lists the regular files of a checkpoint folder (the hub CLI's C(.cache) bookkeeping left out), hashes
    them with sha256 on several threads, and writes the manifest to O(manifest_path).
  - Made once - when O(manifest_path) already holds a manifest of the same O(repo) and O(revision), that
    manifest is kept as it is and returned, so a shard that was damaged later cannot rewrite the truth.
    Delete the manifest file to make a new one.
  - Also writes this node's verification record (O(record_path)) for the files it hashed, so the
    following check does not read them again.
  - Runs on a node or, for a checkpoint on the controller, delegated to localhost.
options:
  path:
    description: The checkpoint folder.
    type: path
    required: true
  repo:
    description: The hub repository the checkpoint is from (recorded in the manifest).
    type: str
    required: true
  revision:
    description: The pinned revision (recorded in the manifest).
    type: str
    required: true
  manifest_path:
    description: Where the manifest is kept.
    type: path
    required: true
  record_path:
    description: Where this node's verification record is kept; omit to write none.
    type: path
  workers:
    description: Files hashed at once.
    type: int
    default: 8
  shards:
    description:
      - The safetensors shards the pinned checkpoint has (its index file not counted); C(0) checks no count.
      - A manifest with another count fails the module before it is written (a download that stopped early), and
        so does a kept one (delete it to make it again).
    type: int
    default: 0
attributes:
  check_mode:
    support: full
    description: Reads and hashes in check mode too (reading changes nothing); writes nothing.
  diff_mode:
    support: full
    description: Shows the manifest's digest before and after.
  idempotent:
    support: full
    description: An existing manifest of the same revision is kept; a second run reports no change.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Manifest of the checkpoint on the head
  dgxspark.ds41f.model_manifest:
    path: /var/lib/ds41f/models/deepseek-ai--DeepSeek-V4.1-Flash/1bae0e10
    repo: deepseek-ai/DeepSeek-V4.1-Flash
    revision: 1bae0e10
    manifest_path: /var/lib/ds41f/models/deepseek-ai--DeepSeek-V4.1-Flash/1bae0e10.manifest.json
    record_path: /var/lib/ds41f/models/deepseek-ai--DeepSeek-V4.1-Flash/1bae0e10.verified.json
"""

RETURN = r"""
manifest:
  description: The manifest (format, repo, revision, files with path, size and sha256, total_bytes, digest).
  returned: always
  type: dict
digest:
  description: sha256 naming the manifest's content; the same on every node that holds this checkpoint.
  returned: always
  type: str
created:
  description: Whether this run made the manifest (false when an existing one was kept).
  returned: always
  type: bool
hashed:
  description: How many files were read in full.
  returned: always
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

MODULE_SPEC = dict(argument_spec={
    "path": {"type": "path", "required": True},
    "repo": {"type": "str", "required": True},
    "revision": {"type": "str", "required": True},
    "manifest_path": {"type": "path", "required": True},
    "record_path": {"type": "path"},
    "workers": {"type": "int", "default": 8},
    "shards": {"type": "int", "default": 0},
}, supports_check_mode=True)


def shard_count(manifest):
    return len([f for f in manifest["files"] if f["path"].endswith(".safetensors") and "index" not in f["path"]])


def check_shards(module, manifest, kept):
    p = module.params
    found = shard_count(manifest)
    if p["shards"] and found != p["shards"]:
        fix = ("delete %s so it is made again" % p["manifest_path"]) if kept else "nothing was written"
        module.fail_json(msg="the checkpoint under %s has %d safetensors shards; the recipe pins %d of %s@%s (%s). "
                             "Fix: complete the source's copy (a download that stopped early?), or correct "
                             "model_shards." % (p["path"], found, p["shards"], p["repo"], p["revision"], fix))


def run(module):
    p = module.params
    plan = Plan(module)
    existing = mf.load_json(p["manifest_path"])
    if (existing and existing.get("repo") == p["repo"] and existing.get("revision") == p["revision"]
            and not mf.validate(existing)):
        check_shards(module, existing, kept=True)
        module.exit_json(**plan.result(manifest=existing, digest=existing["digest"], created=False, hashed=0))
    if not os.path.isdir(p["path"]) or not mf.scan(p["path"]):
        module.fail_json(msg="no checkpoint files under %s, so there is nothing to make a manifest from. Fix: put "
                             "the checkpoint of %s@%s there, or choose another model_source." % (
                                 p["path"], p["repo"], p["revision"]))
    made, hashed = mf.make(p["path"], p["repo"], p["revision"], p["workers"], mf.load_json(p["record_path"] or ""))
    check_shards(module, made, kept=False)
    found = "%s (%s@%s)" % (existing["digest"], existing.get("repo"), existing.get("revision")) if existing else None
    plan.change("model manifest %s" % p["manifest_path"], made["digest"], found,
                "write the manifest of %d files (%.1f GiB) to %s" % (
                    len(made["files"]), made["total_bytes"] / 2.0 ** 30, p["manifest_path"]),
                lambda: mf.write_atomic(p["manifest_path"], mf.dump_json(made)))
    if p["record_path"] and not module.check_mode:
        ok = {f["path"]: mf.stat_key(os.path.join(p["path"], f["path"])) for f in made["files"]}
        mf.write_atomic(p["record_path"], mf.dump_json(mf.record_of(made, ok)))
    module.exit_json(**plan.result(manifest=made, digest=made["digest"], created=True, hashed=len(hashed)))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
