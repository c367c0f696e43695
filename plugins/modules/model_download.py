# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_download
short_description: Download the checkpoint (or some of its files) from the hub at a pinned revision
version_added: 0.1.0
description:
  - Runs the hub CLI (C(hf download REPO [FILES] --revision REV --local-dir PATH)) on the source node.
    The CLI resumes partial downloads; the stage calls this module only when the source node has no
    manifest yet (the whole checkpoint) or when its check named bad files (just those, removed first so
    the CLI fetches them again). Once the source holds a verified copy the stage never calls the hub
    again; serving runs offline (C(HF_HUB_OFFLINE=1)).
  - Needs the hub CLI on the node (C(pip install -U "huggingface_hub[cli]")) and a route to the hub; no
    credentials are needed for this checkpoint.
options:
  repo:
    description: The hub repository.
    type: str
    required: true
  revision:
    description: The pinned revision (a commit hash).
    type: str
    required: true
  path:
    description: The checkpoint folder (the CLI's --local-dir).
    type: path
    required: true
  files:
    description: Only these files (paths inside the repository); empty downloads the whole revision.
    type: list
    elements: str
    default: []
  cli:
    description: The hub CLI command.
    type: str
    default: hf
  workers:
    description: The CLI's parallel downloads (--max-workers).
    type: int
    default: 8
  expected_bytes:
    description: The checkpoint's size; a whole download refuses to start with less free space than this.
    type: int
    default: 0
attributes:
  check_mode:
    support: full
    description: Reports the download it would run; contacts nothing.
  diff_mode:
    support: none
    description: The manifest check that follows shows what changed.
  idempotent:
    support: partial
    description: The module always downloads what it is given; the stage gives it only what is missing.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Download the pinned checkpoint on the head
  dgxspark.ds41f.model_download:
    repo: deepseek-ai/DeepSeek-V4.1-Flash
    revision: 1bae0e10
    path: /var/lib/ds41f/models/deepseek-ai--DeepSeek-V4.1-Flash/1bae0e10
"""

RETURN = r"""
command:
  description: The command that ran (or would run).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

# The CLI keeps per-file download state here inside --local-dir; a stale entry would make it skip a file.
STATE_DIR = os.path.join(".cache", "huggingface", "download")


def download_argv(cli, repo, revision, path, files, workers):
    return [cli, "download", repo, *files, "--revision", revision, "--local-dir", path,
            "--max-workers", str(workers)]


def main():
    module = AnsibleModule(argument_spec={
        "repo": {"type": "str", "required": True},
        "revision": {"type": "str", "required": True},
        "path": {"type": "path", "required": True},
        "files": {"type": "list", "elements": "str", "default": []},
        "cli": {"type": "str", "default": "hf"},
        "workers": {"type": "int", "default": 8},
        "expected_bytes": {"type": "int", "default": 0},
    }, supports_check_mode=True)
    p = module.params
    argv = download_argv(p["cli"], p["repo"], p["revision"], p["path"], p["files"], p["workers"])
    plan = Plan(module)
    what = ", ".join(p["files"]) if p["files"] else "every file"
    plan.change("model download %s@%s" % (p["repo"], p["revision"]), what, "not here",
                " ".join(argv), fix=" ".join(argv))
    free = mf.free_bytes(p["path"])
    if not p["files"] and free < p["expected_bytes"]:
        module.fail_json(msg="%s needs %.0f GiB for %s but %.0f GiB are free. Fix: free space there, or point "
                             "model_root at a larger filesystem." % (p["path"], p["expected_bytes"] / 2.0 ** 30,
                                                                     p["repo"], free / 2.0 ** 30))
    if module.check_mode:
        module.exit_json(**plan.result(command=argv))
    if module.get_bin_path(p["cli"]) is None:
        module.fail_json(msg="the hub CLI %r is not installed on this node. Fix: pip install -U "
                             "\"huggingface_hub[cli]\", or use model_source: controller or node." % p["cli"])
    os.makedirs(p["path"], exist_ok=True)
    for rel in p["files"]:  # a damaged file is fetched again only once the CLI no longer finds it
        for stale in (os.path.join(p["path"], rel), os.path.join(p["path"], STATE_DIR, rel + ".metadata")):
            if os.path.exists(stale):
                os.unlink(stale)
    env = {"HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    rc, out, err = module.run_command(argv, environ_update=env)
    if rc != 0:
        module.fail_json(msg="%s failed (%d): %s" % (" ".join(argv), rc, (err or out).strip()[-2000:]),
                         **plan.result(command=argv))
    module.exit_json(**plan.result(command=argv))


if __name__ == "__main__":
    main()
