# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_release
short_description: Write and read the head's release records (what started, from which image and recipe)
version_added: 0.1.0
description:
  - Each successful start of the serve stage writes one record on the head - release name, image and image ID,
    recipe hash, shape, time and every rank's launch spec - as C(<dir>/<UTC time>-<release>.json).
  - C(present) writes a record unless the newest one already describes the same start (same release, image
    ID, recipe hash and specs), so a re-run of a running release writes nothing.
  - C(query) lists the records, newest last, and names the current one and the previous release - the newest
    record whose release, image ID or recipe differs from the current one - which C(rollback.yml) starts.
options:
  dir:
    description: Where the records live on the head.
    type: path
    default: /var/lib/ds41f/releases
  state:
    description: Write a record, or only read them.
    type: str
    choices: [present, query]
    default: query
  record:
    description: The record to write (C(present)); C(time) is added.
    type: dict
attributes:
  check_mode:
    support: full
    description: Reports the record it would write; writes nothing.
  diff_mode:
    support: full
    description: Shows the new record file.
  idempotent:
    support: full
    description: A record equal to the newest one is not written again.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Record the start
  dgxspark.ds41f.serve_release:
    state: present
    record: {release: spark-ds41f-1030, image: "spark-ds41f:spark-ds41f-1030", image_id: "sha256:...",
             recipe: 3f2a9c0d1e4b5a6c, shape: tp4-ring, specs: {}}
- name: Read the records
  dgxspark.ds41f.serve_release:
  register: releases
"""

RETURN = r"""
records:
  description: Every record, oldest first.
  returned: always
  type: list
  elements: dict
current:
  description: The newest record (C(null) without records).
  returned: always
  type: dict
previous:
  description: The newest record that differs from C(current) in release, image ID or recipe (C(null) if none).
  returned: always
  type: dict
path:
  description: The file written (C(present)).
  returned: when a record is written
  type: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

IDENTITY = ("release", "image_id", "recipe", "specs")


def load(directory):
    records = []
    if not os.path.isdir(directory):
        return records
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name)) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        data["file"] = name
        records.append(data)
    return records


def same_start(a, b):
    return all(a.get(k) == b.get(k) for k in IDENTITY)


def previous_of(records):
    if not records:
        return None
    current = records[-1]
    for record in reversed(records[:-1]):
        if any(record.get(k) != current.get(k) for k in ("release", "image_id", "recipe")):
            return record
    return None


def write(directory, name, record):
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


MODULE_SPEC = dict(argument_spec={
    "dir": {"type": "path", "default": "/var/lib/ds41f/releases"},
    "state": {"type": "str", "default": "query", "choices": ["present", "query"]},
    "record": {"type": "dict"},
}, supports_check_mode=True, required_if=[("state", "present", ["record"])])


def run(module):
    p = module.params
    records = load(p["dir"])
    plan = Plan(module)
    extra = {}
    if p["state"] == "present":
        record = dict(p["record"])
        if not records or not same_start(records[-1], record):
            now = time.gmtime()
            record["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", now)
            name = "%s-%s.json" % (time.strftime("%Y%m%dT%H%M%SZ", now), record.get("release", "release"))
            path = os.path.join(p["dir"], name)
            plan.change("release record %s" % path, json.dumps(record, indent=2, sort_keys=True), None,
                        "write release record %s" % path, lambda: write(p["dir"], name, record))
            record["file"] = name
            records.append(record)
            extra["path"] = path
    module.exit_json(**plan.result(records=records, current=records[-1] if records else None,
                                   previous=previous_of(records), **extra))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
