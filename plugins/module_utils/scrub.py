# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The checkpoint scrub: every file of a node's checkpoint read in full and hashed (sha256) against the manifest
the model stage keeps beside it, and its result as a small state file.

The model stage's own check trusts a file whose size, mtime and inode are those it had when its sha256 last
matched (the node's verification record, manifest.py): bytes that change under a kept size and mtime (a failing
disk, a write that put the mtime back) are seen only by reading every byte. The scrub does that on a timer per
node (ds41f-model-scrub.timer) and when the doctor is asked to (``ds41f doctor --deep``). The model stage's check
reads its state, never hashing itself, and names each file the scrub found bad for as long as the file is the one
the scrub read (same size, mtime and inode): the stage then fetches it again, and a file it replaced is no longer
the scrub's finding.

The state: ``started``, ``finished`` (Unix time), ``seconds``, ``path`` and ``manifest_digest`` (what was read),
``files`` (in the manifest), ``checked`` (judged), ``bytes`` (read), ``complete`` (every file judged),
``reason`` (why not), ``bad`` [{path, problem, stat, kept_stat, sha256, error, expected_size}].

Standard library only: the scrub program on the node carries this file beside it (ds41f_scrub.py).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time

FORMAT = 1
CHUNK = 8 * 1024 * 1024
STAT_KEYS = ("size", "mtime_ns", "ino")
# What a scrub finds wrong with a file: its bytes differ from the manifest's sha256, a read failed, it is gone, or
# its size is not the manifest's.
CORRUPT, UNREADABLE, MISSING, SIZE = "corrupt", "unreadable", "missing", "size"
PROBLEMS = (CORRUPT, UNREADABLE, MISSING, SIZE)
KEPT_STAT = "bytes changed under kept size and mtime"
CHECK = "checkpoint scrub (every byte hashed)"


class Stopped(Exception):
    """The time budget ran out in the middle of a file."""


def stat_of(path):
    st = os.stat(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def _advise(fd, offset, length, advice):
    if hasattr(os, "posix_fadvise"):  # Linux; elsewhere the read is the same, only the cache keeps it
        os.posix_fadvise(fd, offset, length, advice)


def read_sha256(path, stop=None):
    """sha256 hex of a whole file, read once front to back on one thread. Each chunk's pages leave the page cache
    once hashed: on a DGX Spark the page cache is the GPU's unified memory, and a full read of the checkpoint must
    not push the engine out. ``stop()`` true ends the read (Stopped)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        _advise(fd, 0, 0, getattr(os, "POSIX_FADV_SEQUENTIAL", 0))
        hasher, offset = hashlib.sha256(), 0
        while True:
            if stop is not None and stop():
                raise Stopped()
            block = os.read(fd, CHUNK)
            if not block:
                return hasher.hexdigest()
            hasher.update(block)
            _advise(fd, offset, len(block), getattr(os, "POSIX_FADV_DONTNEED", 0))
            offset += len(block)
    finally:
        os.close(fd)


def _bad(rel, problem, expected_size, stat=None, **more):
    return dict({"path": rel, "problem": problem, "expected_size": expected_size, "stat": stat}, **more)


def _error(exc):
    return os.strerror(exc.errno) if exc.errno else str(exc)


def scrub(root, manifest, record=None, stop=None, clock=time.time, budget_s=None):
    """Read every file ``manifest`` lists under ``root`` in full; the state (module doc). ``record``: the node's
    verification record, which tells bytes that changed under the stat they were verified with (``kept_stat``) from
    a file rewritten since. ``stop()`` true: the time budget (``budget_s``, for the reason) ran out."""
    started, begun = clock(), time.monotonic()
    verified = {}
    if isinstance(record, dict) and record.get("manifest_digest") == manifest.get("digest"):
        verified = record.get("files") or {}
    bad, checked, read, reason = [], 0, 0, None
    files = manifest["files"]
    for entry in files:
        rel, size = entry["path"], entry["size"]
        if stop is not None and stop():
            reason = _stopped(checked, len(files), read, budget_s)
            break
        path = os.path.join(root, rel)
        try:
            stat = stat_of(path)
        except OSError as exc:
            problem = MISSING if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREADABLE
            bad.append(_bad(rel, problem, size, error=_error(exc)))
            checked += 1
            continue
        if not os.path.isfile(path):
            bad.append(_bad(rel, MISSING, size, stat, error="not a regular file"))
        elif stat["size"] != size:
            bad.append(_bad(rel, SIZE, size, stat))
        else:
            try:
                sha = read_sha256(path, stop)
            except Stopped:
                reason = _stopped(checked, len(files), read, budget_s)
                break
            except OSError as exc:
                bad.append(_bad(rel, UNREADABLE, size, stat, error=_error(exc)))
                checked += 1
                continue
            read += size
            if sha != entry["sha256"]:
                kept = {k: (verified.get(rel) or {}).get(k) for k in STAT_KEYS} == stat
                bad.append(_bad(rel, CORRUPT, size, stat, sha256=sha, kept_stat=kept))
        checked += 1
    return {"format": FORMAT, "started": started, "finished": clock(), "seconds": round(time.monotonic() - begun, 3),
            "path": root, "manifest_digest": manifest.get("digest"), "files": len(files), "checked": checked,
            "bytes": read, "complete": reason is None, "reason": reason, "bad": bad}


def _stopped(checked, total, read, budget_s):
    return "stopped after %d of %d files (%.1f GiB read): the time budget%s ran out" % (
        checked, total, read / 2.0 ** 30, " of %d s" % budget_s if budget_s else "")


def failed(root, digest, reason, clock=time.time):
    """The state of a scrub that could not start (no usable manifest, say): nothing judged, and why."""
    now = clock()
    return {"format": FORMAT, "started": now, "finished": now, "seconds": 0.0, "path": root, "manifest_digest": digest,
            "files": 0, "checked": 0, "bytes": 0, "complete": False, "reason": reason, "bad": []}


def stamp(when):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def describe(bad):
    """A bad file in words (the doctor's found, the journal's line)."""
    what = bad["problem"]
    if what == CORRUPT:
        if bad.get("kept_stat"):
            return "%s (sha256 %s..., not the manifest's)" % (KEPT_STAT, bad["sha256"][:16])
        return "bytes differ from the manifest (sha256 %s...; rewritten since it was verified)" % bad["sha256"][:16]
    if what == UNREADABLE:
        return "unreadable (%s)" % bad.get("error")
    if what == SIZE:
        return "%d bytes, not %d" % (bad["stat"]["size"], bad["expected_size"])
    return "missing (%s)" % bad.get("error", "")


def load(path):
    """The state file, or None where there is none; a state file that does not parse is a reason of its own."""
    try:
        with open(path) as handle:
            state = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"unusable": "%s cannot be read (%s)" % (path, exc)}
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        return {"unusable": "%s is not a scrub state of format %d" % (path, FORMAT)}
    return state


def write(path, state):
    """Replace the state file whole (a reader sees the old or the new one)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def _about(state, root, digest):
    """Whether the state is about this checkpoint and this manifest."""
    return isinstance(state, dict) and state.get("path") == root and state.get("manifest_digest") == digest


def suspects(state, root, digest):
    """{path: bad entry} for the files the scrub found corrupt or unreadable that are still the ones it read (same
    size, mtime and inode now): what the model stage's check must not vouch for."""
    if not _about(state, root, digest):
        return {}
    out = {}
    for bad in state.get("bad") or []:
        if bad.get("problem") not in (CORRUPT, UNREADABLE) or not bad.get("stat"):
            continue
        try:
            now = stat_of(os.path.join(root, bad["path"]))
        except OSError:
            continue  # gone: the check's own stat names it
        if now == {k: bad["stat"].get(k) for k in STAT_KEYS}:
            out[bad["path"]] = dict(bad, text=describe(bad), read_at=state.get("finished") or 0)
    return out


def span_text(seconds):
    """Seconds as the largest whole unit: 604800 is 1w, 5400 is 90min."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return "%d%s" % (seconds // size, unit)
    return "%ds" % seconds


def unchecked(state, root, digest, now, period_s):
    """Why the scrub's state is no check of this checkpoint now (never ran, another checkpoint, did not finish,
    older than two periods), or None where it is one. A file it found bad stays named either way."""
    period_text = span_text(period_s)
    every = "its timer runs it every %s; ds41f doctor --deep runs it now" % period_text
    if state is None:
        return "never ran on this node (%s)" % every
    if state.get("unusable"):
        return "%s (%s)" % (state["unusable"], every)
    if not _about(state, root, digest):
        return "the last scrub (%s) read another checkpoint or manifest (%s; %s)" % (
            stamp(state.get("finished") or 0), state.get("path"), every)
    if not state.get("complete"):
        return "the last scrub (%s) did not finish: %s" % (stamp(state.get("finished") or 0), state.get("reason"))
    age = now - (state.get("finished") or 0)
    if age > 2 * period_s:
        return ("the last full scrub finished %s, %.1f days ago: more than two periods (%s each). Fix: systemctl "
                "status ds41f-model-scrub.timer on the node; ds41f run model installs and starts it" % (
                    stamp(state["finished"]), age / 86400.0, period_text))
    return None


def due(state, digest, root, now, period_s):
    """Whether the timer's run should scrub: never scrubbed this checkpoint, or the last scrub started a period
    ago or more (a scrub that did not finish is tried again a period after it started, not every hour)."""
    if not isinstance(state, dict) or state.get("unusable") or not _about(state, root, digest):
        return True
    return now - (state.get("started") or 0) >= period_s


def summary(state):
    """One line: what the scrub read and found."""
    bad = state.get("bad") or []
    head = "%d of %d files, %.1f GiB hashed in %.0f s" % (state.get("checked", 0), state.get("files", 0),
                                                        state.get("bytes", 0) / 2.0 ** 30, state.get("seconds", 0))
    if not state.get("complete"):
        head += ", not finished: %s" % state.get("reason")
    if not bad:
        return head + ("; nothing bad" if state.get("checked") else "")
    return head + "; %d bad: %s" % (len(bad), "; ".join("%s %s" % (b["path"], describe(b)) for b in bad[:3])) + (
        "; ..." if len(bad) > 3 else "")
