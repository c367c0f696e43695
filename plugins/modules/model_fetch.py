# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_fetch
short_description: Mend this node's checkpoint from a parent node and record it as verified
version_added: 0.1.0
description:
  - Takes the result of dgxspark.ds41f.model_check on this node and fetches exactly the files it named
    (missing, short, larger, corrupt or unreadable) from the parent node's share (dgxspark.ds41f.node_share), over
    O(streams) parallel streams, dialling the parent's fabric addresses first and its management address
    only when none answers (the result says which network carried the data).
  - Every file arrives under a temporary name, is hashed as it arrives, and takes its real name only
    when size and sha256 match the manifest; a partial file from an interrupted run is resumed.
  - Checks the free space before the first byte moves. Keeps a copy of the manifest beside the
    checkpoint and writes this node's verification record, file by file, so a relay can serve each
    file to its own child as soon as it has it.
  - Without a parent (the source node, mended from its origin by the stage before this step), named
    files are reported against O(origin) in check mode and are an error otherwise.
options:
  path:
    description: The checkpoint folder on this node.
    type: path
    required: true
  manifest:
    description: The manifest made at the source.
    type: dict
    required: true
  manifest_path:
    description: Where this node keeps its copy of the manifest.
    type: path
    required: true
  record_path:
    description: This node's verification record.
    type: path
    required: true
  check:
    description: This node's dgxspark.ds41f.model_check result (C(problems) and C(ok) are read).
    type: dict
    required: true
  parent:
    description:
      - The node to fetch from - C(name), C(addresses) (its fabric addresses on the shared cable) and
        C(management_address).
    type: dict
  origin:
    description: What mends the files when there is no parent (shown in check mode).
    type: str
    default: the source
  node:
    description: This node's name (the share's report counts bytes per child).
    type: str
    required: true
  port:
    description: The parent's share port.
    type: int
    default: 47110
  token:
    description: The run's share token.
    type: str
  streams:
    description: Files received at once.
    type: int
    default: 8
  allow_management:
    description: Fall back to the parent's management address when no fabric address answers.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for a relay to have a file, or for the share to come up.
    type: int
    default: 3600
  reserve_bytes:
    description: Free space that must remain after the repair.
    type: int
    default: 0
attributes:
  check_mode:
    support: full
    description: Lists the files it would fetch, from which node, and what it would record; transfers nothing.
  diff_mode:
    support: full
    description: One entry per file (found problem, expected sha256), plus the manifest copy and the record.
  idempotent:
    support: full
    description: A node whose check found nothing and whose record is current reports no change.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Mend the checkpoint from the parent
  dgxspark.ds41f.model_fetch:
    path: "{{ model_dir }}"
    manifest: "{{ model_manifest_data }}"
    manifest_path: "{{ model_dir }}.manifest.json"
    record_path: "{{ model_dir }}.verified.json"
    check: "{{ model_state }}"
    parent: {name: dgx1, addresses: [10.12.1.1, 10.12.2.1], management_address: 192.168.1.11}
    node: "{{ inventory_hostname }}"
    token: "{{ share_token }}"
"""

RETURN = r"""
fetched:
  description: Files received and verified.
  returned: always
  type: list
  elements: str
received_bytes:
  description: Bytes received over the network (a resumed file counts only its missing part).
  returned: always
  type: int
seconds:
  description: Wall time of the transfer.
  returned: always
  type: float
via:
  description: Which network and addresses carried the data (fabric, or management with the reason).
  returned: when something was fetched
  type: str
actions:
  description: What was done, or would be done in check mode.
  returned: always
  type: list
  elements: str
drift:
  description: What differed, for the doctor's drift table; a file's row carries its object (C(checkpoint file)).
  returned: always
  type: list
  elements: dict
managed:
  description:
    - Every file of the manifest as the object this stage keeps - C(kind) C(checkpoint file), C(name) its path on
      the node, C(size) its size in the manifest. The doctor lists them, and its mutation test (C(tests/mutation/))
      changes each file's bytes under a kept size and mtime, cuts it short or deletes it.
  returned: always
  type: list
  elements: dict
"""

import os
import threading
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils import transfer
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


class Recorder:
    """This node's verification record, rewritten after every verified file (a relay's share reads it)."""

    def __init__(self, path, root, manifest, ok):
        self.path, self.root, self.manifest = path, root, manifest
        self.ok = dict(ok)
        self.lock = threading.Lock()

    def add(self, rel):
        with self.lock:
            self.ok[rel] = mf.stat_key(os.path.join(self.root, rel))
            self.write()

    def write(self):
        mf.write_atomic(self.path, mf.dump_json(mf.record_of(self.manifest, self.ok)))


MODULE_SPEC = dict(argument_spec={
    "path": {"type": "path", "required": True},
    "manifest": {"type": "dict", "required": True},
    "manifest_path": {"type": "path", "required": True},
    "record_path": {"type": "path", "required": True},
    "check": {"type": "dict", "required": True},
    "parent": {"type": "dict"},
    "origin": {"type": "str", "default": "the source"},
    "node": {"type": "str", "required": True},
    "port": {"type": "int", "default": 47110},
    "token": {"type": "str", "no_log": True},
    "streams": {"type": "int", "default": 8},
    "allow_management": {"type": "bool", "default": True},
    "wait_timeout": {"type": "int", "default": 3600},
    "reserve_bytes": {"type": "int", "default": 0},
}, supports_check_mode=True)


def run(module):
    p = module.params
    manifest, check, parent = p["manifest"], p["check"], p["parent"]
    problems = check.get("problems") or []
    entries = {e["path"]: e for e in manifest["files"]}
    plan = Plan(module)
    source = parent["name"] if parent else p["origin"]
    for entry in manifest["files"]:  # every file the stage keeps, in sync or not: the doctor lists each
        plan.manages(*mf.about(p["path"], entry["path"]), size=entry["size"])
    for x in problems:
        entry = entries[x["path"]]
        plan.change("model file %s" % x["path"], "sha256 %s, %d bytes" % (entry["sha256"][:16], entry["size"]),
                    mf.describe(x), "fetch %s (%s) from %s" % (x["path"], x["problem"], source),
                    about=mf.about(p["path"], x["path"]))
    if problems and not parent and not module.check_mode:
        module.fail_json(msg="%s: %s, and no node holds a verified copy to fetch from. Fix: check the source (%s) "
                             "and re-run the model stage." % (p["node"], "; ".join(mf.describe(x) for x in problems),
                                                              p["origin"]), **plan.result())
    copy = mf.load_json(p["manifest_path"])
    if copy != manifest:
        plan.change("model manifest copy %s" % p["manifest_path"], manifest["digest"],
                    copy.get("digest") if isinstance(copy, dict) else None,
                    "keep the source's manifest at %s" % p["manifest_path"])
    ok = {rel: st for rel, st in (check.get("ok") or {}).items() if rel in entries}
    record = mf.load_json(p["record_path"])
    if problems or record != mf.record_of(manifest, ok):
        held = len(record.get("files", {})) if isinstance(record, dict) and record.get(
            "manifest_digest") == manifest["digest"] else 0
        plan.change("model verification record %s" % p["record_path"], "%d of %d files verified" % (
            len(entries), len(entries)), "%d of %d files verified" % (held, len(entries)),
            "record the verified files in %s" % p["record_path"])
    if module.check_mode or not plan.actions:
        module.exit_json(**plan.result(fetched=[], received_bytes=0, seconds=0.0))

    todo = [entries[x["path"]] for x in problems]
    short = mf.room_shortfall(p["path"], sum(e["size"] for e in todo), p["reserve_bytes"])
    if short:
        module.fail_json(msg="%s %s" % (p["node"], short), **plan.result())
    os.makedirs(p["path"], exist_ok=True)
    recorder = Recorder(p["record_path"], p["path"], manifest, ok)
    recorder.write()  # the relay's share reads it: only files verified here are served on
    received, via, start = {}, None, time.monotonic()
    if todo:
        try:
            peer = transfer.dial(parent["name"], parent.get("addresses") or [], parent.get("management_address"),
                                 p["port"], p["token"], p["node"], p["allow_management"])
        except transfer.TransferError as exc:
            module.fail_json(msg="%s: %s" % (p["node"], exc), **plan.result())
        via = peer.via
        try:
            received = transfer.fetch_files(peer, p["path"], todo, p["token"], p["node"], p["streams"],
                                            p["wait_timeout"], recorder.add)
        except (transfer.TransferError, OSError) as exc:
            module.fail_json(msg="%s: fetching from %s failed: %s" % (p["node"], parent["name"], exc),
                             **plan.result(fetched=sorted(set(recorder.ok) - set(ok))))
        finally:
            transfer.done(peer, p["token"], p["node"])
    mf.write_atomic(p["manifest_path"], mf.dump_json(manifest))
    recorder.write()
    seconds = time.monotonic() - start
    module.exit_json(**plan.result(fetched=sorted(received), received_bytes=sum(received.values()),
                                   seconds=round(seconds, 3), via=via))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
