# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Check out one pinned source, apply its patch series, and prove the result is the locked tree.

``run(argv, cwd)`` returns (rc, stdout, stderr): ``module.run_command`` on a node, subprocess in tests.
Git is the judge: ``git apply --index`` refuses a patch that does not fit, and ``git write-tree`` names
the exact tree that the build will copy, so the lock's ``tree`` pins the patched source bit for bit.
"""

from __future__ import annotations

import os
import shutil


class SourceError(RuntimeError):
    """A source cannot be made into its locked tree; the message names the source and the file."""


def _git(run, cwd, *args):
    return run(["git", "-c", "advice.detachedHead=false", "-c", "core.autocrlf=false", *args], cwd)


def state(run, dest):
    """(commit, tree, clean) of a checkout, or None when there is none."""
    if not os.path.isdir(os.path.join(dest, ".git")):
        return None
    rc, head, _ = _git(run, dest, "rev-parse", "HEAD")
    rc2, tree, _ = _git(run, dest, "write-tree")
    rc3, _, _ = _git(run, dest, "diff", "--quiet")
    rc4, untracked, _ = _git(run, dest, "ls-files", "--others", "--exclude-standard")
    if rc or rc2:
        return None
    return head.strip(), tree.strip(), rc3 == 0 and not untracked.strip()


def prepare(run, dest, source, lock_folder):
    """Make ``dest`` the source's commit plus its patches; return what was done (empty if it already was).

    ``source``: {name, url, commit, tree, patches: [paths relative to lock_folder]}.
    """
    name, commit, tree = source["name"], source["commit"], source["tree"]
    now = state(run, dest)
    if now is not None and now[1] == tree and now[2]:
        return []
    done = []
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    _git(run, dest, "init", "--quiet")
    rc, _, err = _git(run, dest, "fetch", "--quiet", "--depth", "1", source["url"], commit)
    if rc != 0:  # servers that refuse a fetch by hash: take the history and find the commit in it
        rc, _, err = _git(run, dest, "fetch", "--quiet", source["url"], "+refs/heads/*:refs/remotes/origin/*",
                          "+refs/tags/*:refs/tags/*")
    if rc != 0:
        raise SourceError("sources.%s: cannot fetch %s from %s: %s" % (name, commit, source["url"], err.strip()))
    rc, _, err = _git(run, dest, "checkout", "--quiet", "--detach", commit)
    if rc != 0:
        raise SourceError("sources.%s: commit %s is not in %s: %s. Fix: correct sources.%s.commit." % (
            name, commit, source["url"], err.strip(), name))
    done.append("checked out %s at %s" % (name, commit[:12]))
    for patch in source["patches"]:
        rc, _, err = _git(run, dest, "apply", "--index", "--whitespace=nowarn", os.path.join(lock_folder, patch))
        if rc != 0:
            raise SourceError("sources.%s: %s does not apply to %s: %s. Fix: rebase the patch onto the commit, "
                              "or pin the commit it was written for." % (name, patch, commit[:12], err.strip()))
    if source["patches"]:
        done.append("applied %d patches to %s" % (len(source["patches"]), name))
    rc, found, err = _git(run, dest, "write-tree")
    found = found.strip()
    if rc != 0 or found != tree:
        raise SourceError("sources.%s: after %d patches the tree is %s, the lock expects %s. Fix: the series or the "
                          "commit changed; re-pin sources.%s.tree only if the change is intended." % (
                              name, len(source["patches"]), found or err.strip(), tree, name))
    return done
