# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model_fragmentation
short_description: Report how fragmented the checkpoint's files are (read-only)
version_added: 0.1.0
description:
  - For every file of the manifest, reads its extent count and ext4's best count with C(e4defrag -c -v)
    (statistics only, it never moves a block) and lists the files with more extents than the best,
    with the C(e4defrag -v) command that would fix each, for a maintenance window.
  - On a filesystem other than ext4, or without e4defrag, the extent count comes from C(filefrag) and
    the best count is unknown; such files are reported as not judged (a warning), never as clean.
  - Fragmentation is a warning; it does not stop the stage.
options:
  path:
    description: The checkpoint folder.
    type: path
    required: true
  manifest:
    description: The manifest; its files are the ones read.
    type: dict
    required: true
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Fragmentation report
  dgxspark.ds41f.model_fragmentation:
    path: "{{ model_dir }}"
    manifest: "{{ model_manifest_data }}"
"""

RETURN = r"""
filesystem:
  description: The filesystem type under the folder.
  returned: always
  type: str
status:
  description: clean, fragmented, or unknown (some files could not be judged).
  returned: always
  type: str
files:
  description: Per file - path, extents, best (null when unknown), tool.
  returned: always
  type: list
  elements: dict
fragmented:
  description: Files with more extents than ext4's best count.
  returned: always
  type: list
  elements: str
fixes:
  description: The command that would defragment each fragmented file (run it in a maintenance window).
  returned: always
  type: list
  elements: str
notes:
  description: Why some files could not be judged.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import fragmentation as frag

MODULE_SPEC = dict(argument_spec={
    "path": {"type": "path", "required": True},
    "manifest": {"type": "dict", "required": True},
}, supports_check_mode=True)


def run(module):
    root = os.path.realpath(module.params["path"])
    paths = [os.path.join(root, e["path"]) for e in module.params["manifest"]["files"]]
    paths = [p for p in paths if os.path.isfile(p)]
    with open("/proc/self/mounts") as handle:
        fstype = frag.filesystem(handle.read(), root)
    e4defrag, filefrag = module.get_bin_path("e4defrag"), module.get_bin_path("filefrag")
    rows, warnings = [], []
    if fstype != "ext4":
        warnings.append("%s is on %s, not ext4: extent counts are shown, but no best count to judge them by" % (
            root, fstype))
    elif not e4defrag:
        warnings.append("e4defrag is not installed (e2fsprogs): extent counts only")
    counts = {}
    if filefrag and paths:
        rc, out, err = module.run_command([filefrag] + paths)
        counts = frag.parse_filefrag(out)
    for path in paths:
        row = {"path": os.path.relpath(path, root), "extents": counts.get(path), "best": None, "tool": "filefrag"}
        if fstype == "ext4" and e4defrag:
            rc, out, err = module.run_command([e4defrag, "-c", "-v", path])
            found = frag.parse_e4defrag(out)
            if found:
                row.update(extents=found[0], best=found[1], tool="e4defrag")
            else:
                warnings.append("e4defrag -c could not read %s: %s" % (row["path"], (err or out).strip()[-200:]))
        rows.append(row)
    summary = frag.report(rows)
    fixes = ["e4defrag -v %s" % os.path.join(root, rel) for rel in summary["fragmented"]]
    module.exit_json(changed=False, filesystem=fstype, status=summary["status"], files=rows,
                     fragmented=summary["fragmented"], fixes=fixes, notes=warnings)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
