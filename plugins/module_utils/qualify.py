# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The node qualification seen from Ansible: the command that runs it in the serving image, the JSON
document it prints (kernels/ds41f_kernels, schema ds41f-qualify/1), and what that document means for the
node: failures that stop it serving, and drift entries for the doctor.

Pure functions over plain data, unit-tested from a document recorded on a real GPU; ``decide`` reads the node
through the hardware layer.
"""

from __future__ import annotations

import json

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform

SCHEMA = "ds41f-qualify/1"
STATUSES = ("passed", "failed", "skipped", "error")
RERUN = ("qualify the node again with its engine stopped: `ansible NODE -m dgxspark.ds41f.node_qualify -a "
         "image=<serve image>`; the serve stage does it before it starts ranks (docs/kernels.md)")


def decide(host):
    """Whether this node's GPU is qualified: ('run', None), ('skip', reason) or ('fail', reason).

    The NVIDIA driver decides: with /proc/driver/nvidia/version the GPU is qualified, whatever the GPU is
    (a GB10, or the H200 the kernels were measured on). Without it a DGX Spark fails (its GPU must serve),
    and any other node, a lab container first, is skipped with the reason.
    """
    if platform.driver_version(host) is not None:
        return "run", None
    if platform.is_spark(host):
        return "fail", ("no NVIDIA driver loaded on this DGX Spark (/proc/driver/nvidia/version is missing): "
                        "the GPU cannot be qualified")
    kind = platform.container(host)
    return "skip", ("node qualification skipped: not a DGX Spark, no NVIDIA driver (%s): there is no GPU to "
                    "qualify here (/proc/driver/nvidia/version is missing); a node with a loaded driver runs it"
                    % ("a %s container" % kind if kind else "no GB10 found"))


def command(image, docker="docker", gpus="all", python="python3", cache_dir=None, kind=None, repeats=None,
            inject_bitflip=None):
    """The argv that qualifies the node's GPU in a throwaway container of ``image``.

    No network: the qualification needs none. ``cache_dir``, when given, is a host folder that becomes
    TileLang's JIT cache inside the container, so compiled kernels outlive the container.
    """
    argv = [docker, "run", "--rm", "--gpus", gpus, "--network", "none", "--entrypoint", python]
    if cache_dir:
        argv += ["--volume", "%s:%s" % (cache_dir, cache_dir), "--env", "TILELANG_CACHE_DIR=%s" % cache_dir]
    argv += [image, "-m", "ds41f_kernels", "qualify", "--json"]
    if kind:
        argv += ["--kind", kind]
    if repeats:
        argv += ["--repeats", str(repeats)]
    if inject_bitflip:
        argv += ["--inject-bitflip", inject_bitflip]
    return argv


def parse(stdout):
    """The qualification document in a command's stdout; ValueError saying what is wrong otherwise.

    The CLI prints only the document on stdout, but a wrapper may print before it: the last line that
    starts a JSON object and parses to the end is taken.
    """
    text = stdout.strip()
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n" and text[i + 1:i + 2] == "{"]
    doc = None
    for start in reversed(starts):
        try:
            doc = json.loads(text[start:])
            break
        except ValueError:
            continue
    if not isinstance(doc, dict):
        raise ValueError("no qualification document in the output (expected one JSON object from "
                         "`python -m ds41f_kernels qualify --json`)")
    if doc.get("schema") != SCHEMA:
        raise ValueError("qualification document has schema %r; this collection reads %s: the image's "
                         "ds41f_kernels does not match the collection" % (doc.get("schema"), SCHEMA))
    if doc.get("status") not in STATUSES:
        raise ValueError("qualification document has status %r (expected one of %s)"
                         % (doc.get("status"), ", ".join(STATUSES)))
    return doc


def census_mismatches(doc):
    """(kernel, where, count, repeats) for every kernel and phase whose repeats gave different bits."""
    census = doc.get("census") or {}
    return [(kernel, where, count, census.get("repeats", 0))
            for phase, where in (("alone", "alone"), ("co_resident", "beside a copy on another stream"))
            for kernel, count in sorted((census.get(phase) or {}).items()) if count]


def failed_checks(doc):
    """Failed gated checks; the census check is left out when its mismatches are listed one by one."""
    listed = bool(census_mismatches(doc))
    return [check for check in doc.get("checks", [])
            if check.get("ok") is False and not (listed and check.get("name") == "census")]


def injected(doc):
    """A first line saying the fault was made on purpose (node_qualify inject_bitflip), when it was."""
    fault = doc.get("injected_fault")
    return ["fault injected on purpose into %s (%s): this tests the refusal, not the GPU"
            % (fault.get("kernel"), fault.get("what"))] if fault else []


def _check_line(check):
    note = " (%s)" % check["note"] if check.get("note") else ""
    return "%s: %s, needs %s %s%s" % (check["name"], check.get("value"), check.get("op"), check.get("limit"), note)


def failures(doc):
    """Why this document does not qualify the node, census mismatches first; empty when it passed."""
    if doc["status"] == "passed":
        return []
    if doc["status"] in ("skipped", "error"):
        return ["qualification %s: %s" % (doc["status"], doc.get("reason") or "no reason given")]
    return injected(doc) + ["census: %s gave different bits in %d of %d repeats %s" % (kernel, count, repeats, where)
            for kernel, where, count, repeats in census_mismatches(doc)] + [_check_line(c) for c in failed_checks(doc)]


def drift(doc):
    """Drift entries (setting, expected, found, fix) for the doctor's table."""
    out = []
    for kernel, where, count, repeats in census_mismatches(doc):
        out.append({"setting": "gpu qualification census %s" % kernel, "expected": "identical bits in every repeat",
                    "found": "%d of %d repeats differed %s" % (count, repeats, where),
                    "fix": "keep this node out of serving; reboot it and " + RERUN})
    for check in failed_checks(doc):
        out.append({"setting": "gpu qualification %s" % check["name"],
                    "expected": "%s %s" % (check.get("op"), check.get("limit")),
                    "found": check.get("note") or check.get("value"), "fix": RERUN})
    if doc["status"] in ("skipped", "error"):
        out.append({"setting": "gpu qualification", "expected": "passed", "found": "%s: %s" % (
            doc["status"], doc.get("reason")), "fix": RERUN})
    compiled = (doc.get("jit") or {}).get("compiled")
    if compiled:
        out.append({"setting": "gpu qualification jit cache", "expected": "every kernel from the image's cache",
                    "found": "%d kernels compiled at run time" % compiled,
                    "fix": "build the image with `python -m ds41f_kernels warmup --kind <kind>` (docs/kernels.md); "
                           "with node_qualify's cache_dir the next run reuses these"})
    return out


def never_run():
    return {"setting": "gpu qualification", "expected": "a recorded qualification", "found": "none recorded",
            "fix": RERUN}
