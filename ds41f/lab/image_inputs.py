"""The lab's image build inputs: a base tarball, a pinned source repository, and the pinned lock.

`ds41f lab image-inputs` (or `python -m ds41f.lab.image_inputs`) makes, under .lab/shared (read-only at
/opt/ds41f-lab in every lab node):
  minbase/bookworm.tar      the Debian minbase root filesystem (ds41f.lab.minbase)
  image/hello.git           images/lab/src/hello committed with a fixed author and date, so its commit is
                            the one images/lab/lock.yml pins
  image/lab/                images/lab/ (lock, Dockerfile, patches) with base.sha256 set to the tarball's
                            digest: the lock the lab's image stage runs (image_lock_file)
Nothing here fetches sources from the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

from ds41f import paths
from ds41f.lab import minbase, podman

LAB_IMAGES = paths.ROOT / "images" / "lab"
OUT = paths.LAB_STATE / "shared" / "image"
LOCK = OUT / "lab" / "lock.yml"
IDENTITY = {"GIT_AUTHOR_NAME": "ds41f lab", "GIT_AUTHOR_EMAIL": "lab@ds41f.invalid",
            "GIT_COMMITTER_NAME": "ds41f lab", "GIT_COMMITTER_EMAIL": "lab@ds41f.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def _git(*args, cwd):
    env = dict(os.environ, **IDENTITY, GIT_CONFIG_NOSYSTEM="1", HOME=str(cwd))
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, text=True, capture_output=True)
    if proc.returncode != 0:
        raise podman.LabError("git %s failed: %s" % (" ".join(args), proc.stderr.strip()))
    return proc.stdout.strip()


def source_repo(name, commit):
    """A bare repository holding images/lab/src/<name> as one commit; checks it is the pinned one."""
    bare = OUT / ("%s.git" % name)
    if bare.exists() and _git("cat-file", "-t", commit, cwd=bare) == "commit":
        return bare
    work = OUT / (".%s-work" % name)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(LAB_IMAGES / "src" / name, work)
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    _git("commit", "-q", "-m", "%s 1.0" % name, cwd=work)
    made = _git("rev-parse", "HEAD", cwd=work)
    if made != commit:
        raise podman.LabError("images/lab/src/%s commits as %s but images/lab/lock.yml pins %s. Fix: the source "
                              "changed; write the new commit (and tree) into the lock." % (name, made, commit))
    shutil.rmtree(bare, ignore_errors=True)
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=OUT)
    shutil.rmtree(work)
    return bare


def ensure(log=print):
    """Return the path of the lab's pinned lock, making whatever is missing."""
    OUT.mkdir(parents=True, exist_ok=True)
    _, digest = minbase.ensure(log)
    lock = yaml.safe_load((LAB_IMAGES / "lock.yml").read_text())
    for name, spec in lock["sources"].items():
        source_repo(name, spec["commit"])
    lock["base"]["sha256"] = digest
    target = LOCK.parent
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(LAB_IMAGES, target, ignore=shutil.ignore_patterns("src"))
    header = "# Written by `ds41f lab image-inputs` from images/lab/lock.yml, base.sha256 pinned to %s.\n" % (
        minbase.TARBALL.relative_to(paths.ROOT))
    LOCK.write_text(header + yaml.safe_dump(lock, sort_keys=False))
    log("lab: image inputs ready (lock %s)" % LOCK.relative_to(paths.ROOT))
    return LOCK


if __name__ == "__main__":
    print(ensure(log=lambda m: print(m, file=sys.stderr)))
