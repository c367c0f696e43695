# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_check
short_description: Check this node's checkpoint against the manifest (read-only)
version_added: 0.1.0
description:
  - Names every file that is missing, short, larger than the manifest says, or whose sha256 differs.
  - Hashes on several threads, but only files whose size, mtime or inode changed since this node's
    verification record was written (O(full=true) hashes every file), so a re-run over the full
    checkpoint is quick while a damaged shard is still caught.
  - Reads the checkpoint scrub's state (O(scrub_state); the scrub reads every byte on a timer and for
    C(ds41f doctor --deep)) without hashing anything itself - a file the scrub found corrupt or unreadable, and that
    still has the size, mtime and inode it read, is a problem even where the record vouches for it (bytes that
    changed under a kept size and mtime), so the model stage fetches it again. A scrub that never ran, did not
    finish, read another manifest, or is older than two periods (O(scrub_period_s)) is listed under
    RV(skipped_checks), never as a pass.
  - A file that cannot be read is a problem (unreadable), not a failure of the check.
  - Reports the bytes a repair needs and the free space of the folder's filesystem, and fails when a repair
    would leave less than O(reserve_bytes) free, so the stage stops on every node before any transfer starts.
  - Changes nothing, in or out of check mode; the doctor calls it as it is.
options:
  path:
    description: The checkpoint folder on this node.
    type: path
    required: true
  manifest:
    description: The manifest made at the source (dgxspark.ds41f.model_manifest's C(manifest)).
    type: dict
    required: true
  record_path:
    description: This node's verification record.
    type: path
    required: true
  full:
    description: Hash every file, whatever the record says.
    type: bool
    default: false
  workers:
    description: Files hashed at once.
    type: int
    default: 8
  reserve_bytes:
    description: Bytes that must stay free on the folder's filesystem after a repair (the recipe's
      C(model_reserve_gib)); a complete copy needs no room.
    type: int
    default: 0
  scrub_state:
    description: The checkpoint scrub's state file on this node (the model stage's C(ds41f-model-scrub)); omit to
      leave the scrub out.
    type: path
  scrub_period_s:
    description: How often the scrub runs, in seconds (C(model_scrub_period)); a state older than two periods is no
      check.
    type: int
    default: 604800
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Check the checkpoint
  dgxspark.ds41f.model_check:
    path: "{{ model_dir }}"
    manifest: "{{ model_manifest_data }}"
    record_path: "{{ model_dir }}.verified.json"
  register: model_state
"""

RETURN = r"""
complete:
  description: Every file of the manifest is here with the right size and sha256.
  returned: always
  type: bool
problems:
  description:
    - One entry per bad file - path, problem, expected_size, found_size.
    - The problem is missing, short, larger than expected, corrupt or unreadable; a problem the checkpoint scrub
      found carries its finding as C(scrub) (what it read, when, and the sha256 it got).
  returned: always
  type: list
  elements: dict
messages:
  description: The problems as sentences, one per file.
  returned: always
  type: list
  elements: str
ok:
  description: Per good file, the stat (size, mtime_ns, ino) it was verified with.
  returned: always
  type: dict
hashed:
  description: Files read in full this time.
  returned: always
  type: int
extra:
  description: Files in the folder that the manifest does not list (left alone).
  returned: always
  type: list
  elements: str
needed_bytes:
  description: Bytes a repair of this node must receive.
  returned: always
  type: int
free_bytes:
  description: Free bytes for an unprivileged writer on the folder's filesystem (or its nearest existing parent).
  returned: always
  type: int
record_digest:
  description: The manifest digest this node's verification record was made against (null without a record).
  returned: always
  type: str
drift:
  description: One entry per bad file for the doctor's drift table, its object the file (C({kind - checkpoint file,
    name})), as M(dgxspark.ds41f.model_fetch) declares it.
  returned: always
  type: list
  elements: dict
scrub:
  description: The checkpoint scrub's last run as its state file says (when it ended, whether it read every file,
    how many it found bad); null without O(scrub_state) or a state.
  returned: always
  type: dict
skipped_checks:
  description: The scrub as not checked, with the reason (C({check, reason})), when its state is no check now.
  returned: always
  type: list
  elements: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils import scrub
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import obj

MODULE_SPEC = dict(argument_spec={
    "path": {"type": "path", "required": True},
    "manifest": {"type": "dict", "required": True},
    "record_path": {"type": "path", "required": True},
    "full": {"type": "bool", "default": False},
    "workers": {"type": "int", "default": 8},
    "reserve_bytes": {"type": "int", "default": 0},
    "scrub_state": {"type": "path"},
    "scrub_period_s": {"type": "int", "default": 604800},
}, supports_check_mode=True)


def scrub_reading(p):
    """(suspects, the state's summary, the not-checked entries) from the scrub's state file."""
    if not p["scrub_state"]:
        return {}, None, []
    state = scrub.load(p["scrub_state"])
    root, digest = p["path"], p["manifest"]["digest"]
    reason = scrub.unchecked(state, root, digest, time.time(), p["scrub_period_s"])
    seen = None
    if isinstance(state, dict) and not state.get("unusable"):
        seen = {k: state.get(k) for k in ("started", "finished", "complete", "files", "checked", "reason")}
        seen["bad"] = len(state.get("bad") or [])
    return (scrub.suspects(state, root, digest), seen,
            [{"check": scrub.CHECK, "reason": reason}] if reason else [])


def run(module):
    p = module.params
    bad = mf.validate(p["manifest"])
    if bad:
        module.fail_json(msg="the manifest is unusable: %s. Fix: re-run the model stage; it hands every node the "
                             "source's manifest." % "; ".join(bad))
    record = mf.load_json(p["record_path"])
    suspects, seen, unchecked = scrub_reading(p)
    result = mf.check(p["path"], p["manifest"], record, p["full"], p["workers"], suspects)
    messages = [mf.describe(x) for x in result["problems"]]
    sha = {e["path"]: e["sha256"] for e in p["manifest"]["files"]}
    # The fix is the stage's run (the doctor names it: ds41f run model), which fetches the file again.
    drift = [{"setting": "model file %s" % x["path"],
              "expected": "sha256 %s, %d bytes" % (sha[x["path"]][:16], x["expected_size"]),
              "found": mf.describe(x), "action": "fetch %s again from a node that holds it" % x["path"],
              "object": obj(*mf.about(p["path"], x["path"]))}
             for x in result["problems"]]
    facts = dict(changed=False, complete=not result["problems"], problems=result["problems"], messages=messages,
                 ok=result["ok"], hashed=len(result["hashed"]), extra=result["extra"],
                 needed_bytes=mf.bytes_needed(p["manifest"], result["problems"]),
                 free_bytes=mf.free_bytes(p["path"]), drift=drift, scrub=seen, skipped_checks=unchecked,
                 record_digest=record.get("manifest_digest") if isinstance(record, dict) else None)
    short = mf.room_shortfall(p["path"], facts["needed_bytes"], p["reserve_bytes"])
    if short:
        module.fail_json(msg="this node %s Nothing was transferred." % short, **facts)
    module.exit_json(**facts)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
