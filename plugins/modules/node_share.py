# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_share
short_description: Serve checkpoint files or an image to this node's children for one stage run
version_added: 0.1.0
description:
  - A short-lived HTTP share (see C(plugins/module_utils/transfer.py)) that the model and image stages
    start with C(async) on every node that sends to another, just before the children fetch
    (dgxspark.ds41f.model_fetch, dgxspark.ds41f.image_load).
  - Serves only the files the manifest lists, and of those only the ones verified on this node - at the
    start (O(ready)) or since, by this node's own fetch (O(record_path)) - so a relay forwards each file
    as soon as it holds it; serves an image with C(docker save) once it is present.
  - Every request must carry the run's O(token); connections are served only on O(addresses) (the
    node's fabric addresses, plus its management address when the fallback is allowed).
  - Ends when every child in O(clients) has said it is done, after O(idle_timeout) seconds without a
    request, or after O(timeout) seconds. Changes nothing on the node.
options:
  node:
    description: This node's name.
    type: str
    required: true
  token:
    description: The run's share token.
    type: str
    required: true
  clients:
    description: The children that fetch from this share.
    type: list
    elements: str
    required: true
  port:
    description: The TCP port.
    type: int
    default: 47110
  addresses:
    description: Local addresses to serve on; empty serves on any.
    type: list
    elements: str
    default: []
  path:
    description: The checkpoint folder (file shares).
    type: path
  manifest:
    description: The manifest; only its files are served.
    type: dict
  ready:
    description: Files verified on this node at the start - {path - stat} from dgxspark.ds41f.model_check's C(ok).
    type: dict
    default: {}
  record_path:
    description: This node's verification record, re-read to serve files verified since the start.
    type: path
  images:
    description: Image IDs this share may send (image shares).
    type: list
    elements: str
    default: []
  idle_timeout:
    description: Seconds without a request after which the share ends.
    type: int
    default: 60
  timeout:
    description: Seconds after which the share ends regardless.
    type: int
    default: 7200
attributes:
  check_mode:
    support: full
    description: Serves nothing in check mode.
  diff_mode:
    support: none
    description: Changes nothing on the node.
  idempotent:
    support: full
    description: Changes nothing on the node.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Share the checkpoint with this node's children
  dgxspark.ds41f.node_share:
    node: "{{ inventory_hostname }}"
    token: "{{ share_token }}"
    clients: [dgx2, dgx4]
    path: "{{ model_dir }}"
    manifest: "{{ model_manifest_data }}"
    ready: "{{ model_state.ok }}"
    record_path: "{{ model_dir }}.verified.json"
  async: 7200
  poll: 0
"""

RETURN = r"""
served_bytes:
  description: Bytes sent to each child.
  returned: always
  type: dict
reason:
  description: Why the share ended.
  returned: always
  type: str
not_done:
  description: Children that never said they were done.
  returned: always
  type: list
  elements: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils import transfer


class Readiness:
    """A file may be sent while its stat is one verified here: at the start, or in the live record."""

    def __init__(self, root, ready, record_path, sha):
        self.root, self.ready, self.record_path, self.sha = root, ready, record_path, sha
        self.seen, self.record = None, {}

    def _live(self):
        try:
            mtime = os.stat(self.record_path).st_mtime_ns
        except (OSError, TypeError):
            return {}
        if mtime != self.seen:
            data = mf.load_json(self.record_path) or {}
            self.record, self.seen = data.get("files", {}), mtime
        return self.record

    def __call__(self, rel):
        try:
            now = mf.stat_key(os.path.join(self.root, rel))
        except OSError:
            return False
        for known in (self.ready.get(rel), self._live().get(rel)):
            same_file = known and all(known.get(k) == now[k] for k in now)
            if same_file and known.get("sha256", self.sha[rel]) == self.sha[rel]:
                return True
        return False


def main():
    module = AnsibleModule(argument_spec={
        "node": {"type": "str", "required": True},
        "token": {"type": "str", "required": True, "no_log": True},
        "clients": {"type": "list", "elements": "str", "required": True},
        "port": {"type": "int", "default": 47110},
        "addresses": {"type": "list", "elements": "str", "default": []},
        "path": {"type": "path"},
        "manifest": {"type": "dict"},
        "ready": {"type": "dict", "default": {}},
        "record_path": {"type": "path"},
        "images": {"type": "list", "elements": "str", "default": []},
        "idle_timeout": {"type": "int", "default": 60},
        "timeout": {"type": "int", "default": 7200},
    }, supports_check_mode=True, required_together=[("path", "manifest")])
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, served_bytes={}, reason="check mode: nothing served", not_done=p["clients"])
    files, ready = {}, None
    if p["manifest"]:
        files = {e["path"]: e["size"] for e in p["manifest"]["files"]}
        ready = Readiness(p["path"], p["ready"], p["record_path"],
                          {e["path"]: e["sha256"] for e in p["manifest"]["files"]})
    share = transfer.Share(p["node"], p["token"], p["clients"], root=p["path"], files=files, ready=ready,
                           images=p["images"], local_addresses=p["addresses"], idle_timeout=p["idle_timeout"],
                           deadline=time.monotonic() + p["timeout"], docker=module.get_bin_path("docker") or "docker")
    try:
        share.bind(p["port"])
    except OSError as exc:
        module.fail_json(msg="%s: cannot listen on port %d: %s. Fix: a share from an interrupted run ends by itself "
                             "after its idle timeout; wait, or set another port." % (p["node"], p["port"], exc))
    result = share.serve()
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
