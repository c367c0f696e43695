# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_qualify
short_description: Qualify a node's GPU with the TileLang kernels of the serving image before it serves
version_added: 0.1.0
description:
  - Runs C(python -m ds41f_kernels qualify --json) in a throwaway container of the serving image
    (C(docker run --rm --gpus all --network none)). It measures memory bandwidth (copy, triad) against torch
    and the datasheet peak, bf16 and FP8 GEMMs against torch, and a bit-repeat census of every kernel, alone and
    beside a bandwidth-heavy kernel on another stream. Thresholds per device kind are data in the image
    (C(ds41f_kernels/thresholds.yml)); see C(docs/kernels.md).
  - Returns the qualification document as the fact C(ds41f_qualify) and keeps it in O(record) on the node,
    which a check-mode run (the doctor) reads.
  - Fails the node when the census found a repeat with different bits, when a gated check failed, or when
    the image sees no GPU although the node has an NVIDIA driver; census mismatches are named first.
  - In check mode it runs nothing on the GPU, because a run compiles into TileLang's cache and takes GPU
    memory from a running engine. It reads O(record) and reports its findings, or a missing record, as drift.
  - A node without an NVIDIA driver that is not a DGX Spark (a lab container) is skipped, with the reason;
    a DGX Spark without a loaded driver fails.
options:
  image:
    description: The serving image, which carries C(ds41f_kernels) (the C([node]) extra).
    type: str
    required: true
  docker:
    description: The container command.
    type: str
    default: docker
  gpus:
    description: The value of C(docker run --gpus).
    type: str
    default: all
  python:
    description: The Python interpreter inside the image (the container's entrypoint for this run).
    type: str
    default: python3
  cache_dir:
    description:
      - A host folder mounted at the same path as TileLang's JIT cache, so kernels compiled by one run are
        reused by the next. Without it the run uses the cache the image was built with.
    type: path
  kind:
    description: Force a device kind of C(thresholds.yml) (C(gb10), C(h200), C(default)) instead of matching.
    type: str
  repeats:
    description: Census repeats; a run shorter than the device kind requires fails its census check.
    type: int
  inject_bitflip:
    description:
      - For testing the refusal only. A kernel name (C(copy), C(triad), C(gemm_bf16), C(gemm_fp8),
        C(gemm_bf16_decode)) whose census runs get one output bit flipped on every second run, so a healthy GPU
        looks like one that gives different bits and the node fails. The document keeps C(injected_fault) and
        the first failure says the fault was injected.
    type: str
  record:
    description: Where the last qualification document is kept on the node.
    type: path
    default: /var/lib/ds41f/qualify.json
  timeout:
    description: Seconds the qualification may run before it is stopped (C(timeout) from coreutils).
    type: int
    default: 1800
attributes:
  check_mode:
    support: full
    description: Runs nothing; reads the record of the last run and reports it.
  diff_mode:
    support: none
    description: Changes no configuration.
  idempotent:
    support: partial
    description:
      - Always reports C(changed=false). Each run measures again and replaces O(record), a report of the
        measurement (like a log), which is not counted as a change. With O(cache_dir), the first run also
        fills that cache.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Qualify this node's GPU in the serving image before the engine starts
  dgxspark.ds41f.node_qualify:
    image: "{{ serve_image }}"

- name: Show the last qualification (doctor; runs nothing)
  dgxspark.ds41f.node_qualify:
    image: "{{ serve_image }}"
  check_mode: true
"""

RETURN = r"""
ansible_facts:
  description: Facts to add.
  returned: when a document was read (not when skipped)
  type: dict
  contains:
    ds41f_qualify:
      description: The qualification document (schema C(ds41f-qualify/1)), with C(recorded_at).
      type: dict
      sample: {schema: ds41f-qualify/1, status: passed, census_mismatches: 0,
               device: {name: NVIDIA H200, kind: h200, arch: sm_90a}}
qualify:
  description: The same document as C(ds41f_qualify), for C(register) when the task failed.
  returned: when the qualification ran
  type: dict
failures:
  description: Why the node did not qualify, census mismatches first.
  returned: always
  type: list
  elements: str
drift:
  description: The findings as drift entries for the doctor (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
actions:
  description: Always empty; the module converges nothing.
  returned: always
  type: list
  elements: str
command:
  description: The command that ran (or, in check mode, would run).
  returned: always
  type: list
  elements: str
"""

import json
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import qualify
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host


def read_record(path):
    try:
        with open(path) as handle:
            return qualify.parse(handle.read())
    except FileNotFoundError:
        return None


def write_record(module, path, doc):
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=folder, prefix=".qualify.")
    with os.fdopen(handle, "w") as out:
        json.dump(doc, out, indent=1)
    os.chmod(temp, 0o644)
    module.atomic_move(temp, path)


MODULE_SPEC = dict(
    argument_spec={
        "image": {"type": "str", "required": True},
        "docker": {"type": "str", "default": "docker"},
        "gpus": {"type": "str", "default": "all"},
        "python": {"type": "str", "default": "python3"},
        "cache_dir": {"type": "path"},
        "kind": {"type": "str"},
        "repeats": {"type": "int"},
        "inject_bitflip": {"type": "str"},
        "record": {"type": "path", "default": "/var/lib/ds41f/qualify.json"},
        "timeout": {"type": "int", "default": 1800},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    argv = qualify.command(p["image"], p["docker"], p["gpus"], p["python"], p["cache_dir"], p["kind"], p["repeats"],
                           p["inject_bitflip"])
    result = {"changed": False, "actions": [], "drift": [], "failures": [], "command": argv}
    host = module_host(module)

    def skip_without_driver():
        action, reason = qualify.decide(host)
        if action == "fail":
            module.fail_json(msg=reason, **result)
        if action == "skip":
            module.exit_json(skipped=True, msg=reason, **result)

    if module.check_mode:
        try:
            doc = read_record(p["record"])
        except ValueError as err:
            module.fail_json(msg="%s: %s" % (p["record"], err), **result)
        if doc is not None:  # a record is evidence on any node
            result.update(failures=qualify.failures(doc), drift=qualify.drift(doc),
                          ansible_facts={"ds41f_qualify": doc})
            module.exit_json(msg="last qualification (%s): %s" % (doc.get("recorded_at"), doc["status"]), **result)
        skip_without_driver()
        result["drift"] = [qualify.never_run()]
        module.exit_json(msg="no qualification recorded in %s" % p["record"], **result)

    skip_without_driver()
    rc, out, err = module.run_command(["timeout", str(p["timeout"])] + argv)
    try:
        doc = qualify.parse(out)
    except ValueError as problem:
        stopped = " (stopped after timeout=%d s)" % p["timeout"] if rc == 124 else ""
        module.fail_json(msg="%s%s; rc %d, stderr: %s" % (problem, stopped, rc, err.strip()[-2000:]), **result)
    doc["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_record(module, p["record"], doc)
    result.update(failures=qualify.failures(doc), drift=qualify.drift(doc), ansible_facts={"ds41f_qualify": doc},
                  qualify=doc)
    if doc["status"] != "passed":
        # A skipped run here means the image sees no GPU although the node has a driver: a broken runtime.
        module.fail_json(msg="node qualification %s: %s" % (doc["status"], "; ".join(result["failures"])), **result)
    module.exit_json(msg="node qualification passed (%s, %s)" % (doc["device"]["name"], doc["device"]["kind"]),
                     **result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
