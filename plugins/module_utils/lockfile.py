# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The image lock: every build input pinned, and one hash that names them all.

A release folder ``images/<release>/`` holds ``lock.yml``, the ``Dockerfile`` and, per source, its patch
series ``patches/<source>/NNNN-<what>.patch`` (applied in number order). The lock says:

    format: 1
    release: spark-ds41f-1030
    image: spark-ds41f:spark-ds41f-1030          # name:tag the build produces (never overwritten)
    base:                                       # one of:
      ref: docker.io/vllm/vllm-openai@sha256:<64 hex>   # pulled by digest
      tarball: /path/rootfs.tar                  # or a root filesystem imported with docker import,
      sha256: <64 hex>                           #    pinned by the tarball's sha256 (its layer digest)
    dockerfile: Dockerfile
    sources:
      vllm: {url: ..., commit: <40 hex>, patches: 567, tree: <40 hex git tree after the series>}
    build: {memory_per_job_gib: 8, reserve_gib: 24, max_jobs: 10, min_available_gib: 64}
    smoke: [python3, -c, "import vllm"]          # run in the new image before it is tagged
    smoke_run_args: [--gpus, all]

The input hash covers the base, every source pin, every patch's bytes, the Dockerfile, the build policy
and the smoke command; it is the image's ``ds41f.input-hash`` label, so "already built" is a label read,
not a guess.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

FORMAT = 1
HEX40 = re.compile(r"^[0-9a-f]{40}\Z")  # \Z, not $: "$" lets a trailing newline through
HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
DIGEST_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}\Z")
IMAGE_REF = re.compile(r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})\Z")
SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")
PATCH_NAME = re.compile(r"^(\d{4})-[A-Za-z0-9._-]+\.patch$")
BUILD_KEYS = {"memory_per_job_gib": 8, "reserve_gib": 24, "max_jobs": 10, "min_available_gib": 64}
LABEL = "ds41f"


class LockError(ValueError):
    """The lock does not pin what a build needs; ``problems`` name each field and its fix."""

    def __init__(self, source, problems):
        self.problems = list(problems)
        super().__init__("%s (%d problem%s):\n%s" % (source, len(self.problems), "" if len(self.problems) == 1 else "s",
                                                     "\n".join("  - %s" % p for p in self.problems)))


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def patch_series(folder):
    """The NNNN-*.patch files of one source, in order, and the problems with their numbering."""
    if not os.path.isdir(folder):
        return [], []
    names = sorted(n for n in os.listdir(folder) if n.endswith(".patch"))
    problems = []
    for i, name in enumerate(names, 1):
        match = PATCH_NAME.match(name)
        if not match:
            problems.append("%s is not named NNNN-<what>.patch" % name)
        elif int(match.group(1)) != i:
            problems.append("%s is patch %d of the series; number it %04d (no gaps, no repeats)" % (name, i, i))
    return names, problems


def load(lock, folder, source="lock.yml"):
    """Check a parsed lock (``folder`` holds it) and return the build plan; raise LockError otherwise.

    The plan: release, image, base, dockerfile, sources (with patch paths relative to ``folder``),
    build, smoke, smoke_run_args, files (every input file, relative), input_hash, labels.
    """
    bad = []

    def need(cond, where, message, fix):
        if not cond:
            bad.append("%s: %s Fix: %s" % (where, message, fix))
        return cond

    if not isinstance(lock, dict):
        raise LockError(source, ["the file is not a YAML mapping. Fix: write format, release, image, base, "
                                 "dockerfile, sources, build and smoke keys."])
    need(lock.get("format") == FORMAT, "format", "is %r; this collection reads format %d." % (
        lock.get("format"), FORMAT), "write format: %d." % FORMAT)
    release = lock.get("release")
    need(isinstance(release, str) and release, "release", "is missing.", "name the release, e.g. spark-ds41f-1030.")
    image = lock.get("image")
    need(isinstance(image, str) and IMAGE_REF.match(image or ""), "image", "%r is not name:tag." % (image,),
         "write image: spark-ds41f:<tag> (lower-case name, explicit tag).")

    base = lock.get("base") if isinstance(lock.get("base"), dict) else {}
    if "ref" in base:
        need(isinstance(base["ref"], str) and DIGEST_REF.match(base["ref"]), "base.ref",
             "%r is not pinned by digest." % (base["ref"],),
             "write repository@sha256:<64 hex>; `docker image inspect --format '{{index .RepoDigests 0}}' IMAGE` "
             "on the node that tested it prints it.")
    elif "tarball" in base:
        need(isinstance(base["tarball"], str) and base["tarball"].startswith("/"), "base.tarball",
             "%r is not an absolute path on the build node." % (base["tarball"],), "give the tarball's absolute path.")
        need(isinstance(base.get("sha256"), str) and HEX64.match(base.get("sha256") or ""), "base.sha256",
             "%r is not the tarball's sha256 (64 hex)." % (base.get("sha256"),),
             "write the output of sha256sum TARBALL.")
    else:
        need(False, "base", "names neither ref (pulled by digest) nor tarball (imported).",
             "write base: {ref: repository@sha256:<digest>} or base: {tarball: PATH, sha256: HEX}.")

    dockerfile = lock.get("dockerfile", "Dockerfile")
    need(isinstance(dockerfile, str) and os.path.isfile(os.path.join(folder, dockerfile)), "dockerfile",
         "%s is not a file beside the lock." % (dockerfile,), "add it or correct the name.")

    sources = []
    raw_sources = lock.get("sources")
    if not need(isinstance(raw_sources, dict) and raw_sources, "sources", "lists no upstream source.",
                "write sources: {name: {url, commit, patches, tree}}."):
        raw_sources = {}
    for name, spec in raw_sources.items():
        where = "sources.%s" % name
        named = need(isinstance(name, str) and SOURCE_NAME.match(name), where, "is not a lower-case source name.",
                     "use letters, digits, '-' and '_'.")
        if not named or not need(isinstance(spec, dict), where, "is not a mapping.",
                                 "write {url, commit, patches, tree}."):
            continue
        need(isinstance(spec.get("url"), str) and spec.get("url"), where + ".url", "is missing.",
             "give the git URL (or a path on the build node) to fetch it from.")
        commit = spec.get("commit")
        need(isinstance(commit, str) and HEX40.match(commit), where + ".commit",
             "%r is not a full 40-hex commit." % (commit,),
             "pin the exact commit: `git rev-parse <tag or short hash>` in a clone prints it.")
        tree = spec.get("tree")
        need(isinstance(tree, str) and HEX40.match(tree), where + ".tree",
             "%r is not the full 40-hex git tree after the patch series." % (tree,),
             "apply the series to the commit and write `git write-tree`'s output.")
        count = spec.get("patches", 0)
        names, numbering = patch_series(os.path.join(folder, "patches", name))
        if need(isinstance(count, int) and not isinstance(count, bool) and count >= 0, where + ".patches",
                "%r is not a patch count." % (count,), "write the number of patches in patches/%s/." % name):
            need(len(names) == count, where + ".patches", "the lock expects %d patches, patches/%s/ holds %d." % (
                count, name, len(names)), "add the missing NNNN-*.patch files (or correct the count).")
        for problem in numbering:
            need(False, "patches/%s" % name, problem + ".", "renumber the series.")
        sources.append({"name": name, "url": spec.get("url"), "commit": commit, "tree": tree,
                        "patches": ["patches/%s/%s" % (name, n) for n in names]})

    build = dict(BUILD_KEYS)
    raw_build = lock.get("build") or {}
    for key, value in raw_build.items() if isinstance(raw_build, dict) else ():
        known = need(key in BUILD_KEYS, "build.%s" % key, "is not a build setting.", "use: %s." % ", ".join(BUILD_KEYS))
        if known and need(isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
                          "build.%s" % key, "%r is not a number." % (value,), "write a number of GiB or jobs."):
            build[key] = value
    smoke = lock.get("smoke")
    need(isinstance(smoke, list) and smoke and all(isinstance(a, str) for a in smoke), "smoke",
         "is not a command (a list of strings).", "write smoke: [python3, -c, 'import vllm'].")
    run_args = lock.get("smoke_run_args", [])
    need(isinstance(run_args, list) and all(isinstance(a, str) for a in run_args), "smoke_run_args",
         "is not a list of docker run arguments.", "write e.g. [--gpus, all], or leave it out.")
    if bad:
        raise LockError(source, bad)

    files = [dockerfile] + [p for s in sources for p in s["patches"]]
    plan = {"release": release, "image": image, "base": dict(base), "dockerfile": dockerfile,
            "sources": sources, "build": build, "smoke": list(smoke), "smoke_run_args": list(run_args),
            "files": files}
    plan["input_hash"] = input_hash(plan, {f: _sha256_file(os.path.join(folder, f)) for f in files})
    plan["labels"] = labels(plan)
    return plan


def input_hash(plan, file_digests):
    """sha256 over everything that decides the image's content (names and tags are not content)."""
    body = {
        "base": plan["base"], "build": plan["build"], "smoke": plan["smoke"],
        "sources": [[s["name"], s["url"], s["commit"], s["tree"]] for s in plan["sources"]],
        "files": [[f, file_digests[f]] for f in plan["files"]],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def labels(plan):
    out = {"%s.input-hash" % LABEL: plan["input_hash"], "%s.release" % LABEL: plan["release"],
           "%s.base" % LABEL: plan["base"].get("ref") or "sha256:%s" % plan["base"]["sha256"]}
    for s in plan["sources"]:
        out["%s.source.%s.commit" % (LABEL, s["name"])] = s["commit"]
        out["%s.source.%s.tree" % (LABEL, s["name"])] = s["tree"]
    return out


def build_jobs(mem_available_bytes, cpus, policy):
    """Parallel compile jobs the node can afford: (jobs, reason), or (0, reason) when it cannot build."""
    gib = float(1 << 30)
    available = mem_available_bytes / gib
    if available < policy["min_available_gib"]:
        return 0, "%.1f GiB available, the build needs %s GiB" % (available, policy["min_available_gib"])
    by_memory = int((available - policy["reserve_gib"]) // max(policy["memory_per_job_gib"], 0.001))
    jobs = max(1, min(by_memory, int(policy["max_jobs"]), cpus))
    return jobs, "%d jobs: %.1f GiB available, %s GiB reserved, %s GiB per job, %d CPUs, at most %s" % (
        jobs, available, policy["reserve_gib"], policy["memory_per_job_gib"], cpus, policy["max_jobs"])
