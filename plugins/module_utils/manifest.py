# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The checkpoint manifest (file list, sizes, sha256) and a node's record of having verified against it.

The manifest is made once, at the source, and is the same on every node. A node's *record* keeps, per
file, the size, mtime and inode it had when its sha256 last matched the manifest: a later check hashes
only files whose stat changed since (or every file when asked to), so a re-run over 476 GiB is quick
while an overwritten, truncated or replaced shard is still found.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

FORMAT = 1
# Hub CLI bookkeeping inside a --local-dir download; never part of the checkpoint itself.
EXCLUDE_DIRS = (".cache",)
PART_SUFFIX = ".ds41f-part"  # a file being received; becomes the real name only once its sha256 matched
CHUNK = 8 * 1024 * 1024

MISSING, SHORT, LONG, CORRUPT, UNREADABLE = "missing", "short", "larger than expected", "corrupt", "unreadable"
# The doctor's object for one file of the checkpoint: the kind its rows carry and the model stage declares it as.
KIND = "checkpoint file"


def about(root, rel):
    """(kind, name) of the checkpoint file ``rel`` under ``root``: a doctor row's object, as converge.obj takes it."""
    return KIND, os.path.join(root, rel)


def scan(root):
    """[(relative path, size)] of the regular files under ``root``, sorted, bookkeeping left out."""
    found = []
    for top, dirs, files in os.walk(root):
        if top == root:
            dirs[:] = [d for d in dirs if d not in EXCLUDE_DIRS]
        dirs.sort()
        for name in files:
            if name.endswith(PART_SUFFIX):
                continue
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append((os.path.relpath(path, root), os.path.getsize(path)))
    return sorted(found)


def sha256_file(path, offset=0, hasher=None):
    """sha256 hex of a file (a ``hasher`` already fed with the first ``offset`` bytes continues it)."""
    hasher = hasher or hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(offset)
        for block in iter(lambda: handle.read(CHUNK), b""):
            hasher.update(block)
    return hasher.hexdigest()


def hash_many(root, paths, workers, errors=None):
    """{path: sha256} with ``workers`` threads (hashlib releases the GIL, so threads use every core). With an
    ``errors`` dict, a file that cannot be read is left out and its error kept there instead of raised."""
    def one(rel):
        try:
            return sha256_file(os.path.join(root, rel))
        except OSError as exc:
            if errors is None:
                raise
            errors[rel] = os.strerror(exc.errno) if exc.errno else str(exc)
            return None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        digests = pool.map(one, paths)
        return {rel: sha for rel, sha in zip(paths, digests, strict=True) if sha is not None}


def stat_key(path):
    st = os.stat(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def digest(manifest):
    """One sha256 that names a manifest's content (repository, revision, every file's path, size, sha256)."""
    body = {"repo": manifest.get("repo"), "revision": manifest.get("revision"),
            "files": [[f["path"], f["size"], f["sha256"]] for f in manifest["files"]]}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def make(root, repo, revision, workers, record=None):
    """The manifest of the files under ``root``; files that ``record`` vouches for are not hashed again.

    Returns (manifest, hashed paths).
    """
    files = scan(root)
    known = (record or {}).get("files", {})
    reuse, todo = {}, []
    for rel, _ in files:
        entry = known.get(rel)
        if entry and entry.get("sha256") and _unchanged(os.path.join(root, rel), entry):
            reuse[rel] = entry["sha256"]
        else:
            todo.append(rel)
    hashed = hash_many(root, todo, workers)
    manifest = {
        "format": FORMAT, "repo": repo, "revision": revision,
        "files": [{"path": rel, "size": size, "sha256": reuse.get(rel) or hashed[rel]} for rel, size in files],
    }
    manifest["total_bytes"] = sum(f["size"] for f in manifest["files"])
    manifest["digest"] = digest(manifest)
    return manifest, todo


def _unchanged(path, entry):
    try:
        now = stat_key(path)
    except OSError:
        return False
    return all(now[k] == entry.get(k) for k in ("size", "mtime_ns", "ino"))


def validate(manifest):
    """Problems with a manifest's shape (it travels through the controller as a variable)."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list) or not manifest["files"]:
        return ["the manifest has no file list"]
    problems = []
    for i, entry in enumerate(manifest["files"]):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/"):
            problems.append("files[%d].path %r is not a relative path inside the checkpoint" % (i, path))
        elif not isinstance(entry.get("size"), int) or len(str(entry.get("sha256", ""))) != 64:
            problems.append("files[%d] (%s) lacks a size or a sha256" % (i, path))
    if not problems and manifest.get("digest") != digest(manifest):
        problems.append("its digest does not match its file list (edited by hand?)")
    return problems


def check(root, manifest, record=None, full=False, workers=4, suspects=None):
    """Compare the files under ``root`` with ``manifest``.

    Returns a dict: ``problems`` [{path, problem, expected_size, found_size[, scrub]}], ``ok`` {path: stat} for
    files that match, ``hashed`` (paths read in full), ``extra`` (files the manifest does not list).
    A file the record vouches for (same manifest digest, same size, mtime and inode) is not read unless
    ``full``. ``suspects`` {path: the scrub's finding} (scrub.suspects): files the checkpoint scrub read in full
    and found corrupt or unreadable, still with the stat it read them at; they are problems without a read here.
    A file that cannot be read is a problem of its own (unreadable), never a crash of the check.
    """
    vouched = {}
    if record and record.get("manifest_digest") == manifest["digest"] and not full:
        vouched = record.get("files", {})
    suspects = suspects or {}
    problems, ok, todo = [], {}, []
    for entry in manifest["files"]:
        rel, size = entry["path"], entry["size"]
        path = os.path.join(root, rel)
        try:
            st = stat_key(path)
        except OSError:
            problems.append(_problem(rel, MISSING, size, None))
            continue
        if not os.path.isfile(path):
            problems.append(_problem(rel, MISSING, size, None))
        elif st["size"] < size:
            problems.append(_problem(rel, SHORT, size, st["size"]))
        elif st["size"] > size:
            problems.append(_problem(rel, LONG, size, st["size"]))
        elif rel in suspects and all(suspects[rel]["stat"].get(k) == st[k] for k in st):
            found = suspects[rel]
            problems.append(_problem(rel, CORRUPT if found["problem"] == CORRUPT else UNREADABLE, size, st["size"],
                                     scrub=found))
        elif rel in vouched and all(vouched[rel].get(k) == st[k] for k in st):
            ok[rel] = st
        else:
            todo.append((entry, st))
    errors = {}
    digests = hash_many(root, [e["path"] for e, _ in todo], workers, errors)
    for entry, st in todo:
        if entry["path"] in errors:
            problems.append(_problem(entry["path"], UNREADABLE, entry["size"], st["size"],
                                     error=errors[entry["path"]]))
        elif digests[entry["path"]] == entry["sha256"]:
            ok[entry["path"]] = st
        else:
            problems.append(_problem(entry["path"], CORRUPT, entry["size"], st["size"]))
    listed = {e["path"] for e in manifest["files"]}
    extra = [rel for rel, _ in scan(root) if rel not in listed] if os.path.isdir(root) else []
    return {"problems": problems, "ok": ok, "hashed": [e["path"] for e, _ in todo], "extra": extra}


def _problem(rel, problem, expected, found, **more):
    return dict({"path": rel, "problem": problem, "expected_size": expected, "found_size": found}, **more)


def record_of(manifest, ok):
    """A node's record: the manifest it was checked against and the stat of every file that matched."""
    sha = {e["path"]: e["sha256"] for e in manifest["files"]}
    return {"format": FORMAT, "manifest_digest": manifest["digest"],
            "files": {rel: dict(st, sha256=sha[rel]) for rel, st in sorted(ok.items())}}


def bytes_needed(manifest, problems):
    """Bytes a node must receive to mend ``problems`` (whole files: partial files are restarted)."""
    size = {e["path"]: e["size"] for e in manifest["files"]}
    return sum(size[p["path"]] for p in problems)


def describe(problem):
    found = problem.get("scrub")
    if found:  # the checkpoint scrub's finding, in its own words (scrub.suspects)
        return "%s: %s, in the scrub of %s" % (problem["path"], found["text"], time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(found["read_at"])))
    if problem["problem"] == MISSING:
        return "%s is missing" % problem["path"]
    if problem["problem"] == CORRUPT:
        return "%s is corrupt (sha256 differs, %d bytes)" % (problem["path"], problem["found_size"])
    if problem["problem"] == UNREADABLE:
        return "%s is unreadable (%s)" % (problem["path"], problem.get("error"))
    return "%s is %s: %d of %d bytes" % (problem["path"], problem["problem"], problem["found_size"],
                                          problem["expected_size"])


def room_shortfall(path, needed, reserve):
    """Why ``path``'s filesystem cannot take ``needed`` bytes and keep ``reserve`` free, with the fix; None when it
    can, or when nothing is needed. model_check asks before any transfer, model_fetch again as it starts one."""
    free = free_bytes(path)
    if not needed or needed + reserve <= free:
        return None
    gib = 2.0 ** 30
    return ("must receive %.1f GiB into %s and keep %.1f GiB free, but its filesystem has %.1f GiB free. Fix: free "
            "space there, or move model_dir to a larger filesystem (model_reserve_gib is what stays free)." % (
                needed / gib, path, reserve / gib, free / gib))


def free_bytes(path):
    """Free bytes for an unprivileged writer where ``path`` is (or would be created)."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def load_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def dump_json(data):
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def write_atomic(path, text):
    """Write a small file so that a reader sees the old or the new content, never half of it."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
