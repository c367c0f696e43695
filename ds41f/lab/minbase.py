"""A minimal Debian root filesystem tarball (minbase + python3): the base of the lab's images (no registry here).

`ds41f lab minbase` (or `python -m ds41f.lab.minbase`) writes .lab/shared/minbase/bookworm.tar once and
its sha256 beside it; lab nodes see it read-only at /opt/ds41f-lab/minbase/bookworm.tar, where the image
stage's lab lock imports it (`docker import`) and the serve stage's lab image can reuse it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import time

from ds41f.lab import podman
from ds41f.paths import LAB_STATE

SUITE = "bookworm"
# Beyond minbase: what the lab's serving images need to run the lab engine (vLLM CPU, bind-mounted from
# /opt/ds41f-lab/engine): Debian's python3, and libnuma1 that vLLM's CPU extension links.
PACKAGES = ("python3", "libnuma1")
FOLDER = LAB_STATE / "shared" / "minbase"
TARBALL = FOLDER / ("%s.tar" % SUITE)
NODE_PATH = "/opt/ds41f-lab/minbase/%s.tar" % SUITE  # the same file inside every lab node
# A fixed timestamp so two builds from the same package versions give the same bytes.
SOURCE_DATE_EPOCH = "1767225600"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _only_one_builder():
    """make test builds the lab engine (which needs this tarball) while a scenario's preparation may ask for it too:
    the second caller waits for the first one's tarball instead of writing the same partial file."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    with open(FOLDER / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure(log=print):
    """Return (tarball path, sha256), building the tarball first if it is missing (about a minute)."""
    with _only_one_builder():
        return _ensure(log)


def _ensure(log):
    digest_file = TARBALL.with_suffix(".tar.sha256")
    stamp = TARBALL.with_suffix(".tar.packages")  # what the tarball was made with: a new package list remakes it
    if TARBALL.exists() and digest_file.exists() and stamp.exists() and stamp.read_text() == ",".join(PACKAGES):
        return TARBALL, digest_file.read_text().split()[0]
    partial = TARBALL.with_suffix(".tar.partial")
    log("lab: building the %s minbase tarball (about a minute)" % SUITE)
    start = time.monotonic()
    proc = subprocess.run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
                           "--customize-hook=chroot \"$1\" apt-get clean", "--format=tar", SUITE, str(partial)],
                          env=dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise podman.LabError("mmdebstrap failed:\n%s\nFix: apt-get install -y mmdebstrap, and check that "
                              "Debian's mirror is reachable." % tail)
    digest = sha256(partial)
    partial.rename(TARBALL)
    digest_file.write_text("%s  %s\n" % (digest, TARBALL.name))
    stamp.write_text(",".join(PACKAGES))
    log("lab: %s (%d MB, sha256 %s) in %.0f s" % (TARBALL, TARBALL.stat().st_size >> 20, digest[:12],
                                                  time.monotonic() - start))
    return TARBALL, digest


if __name__ == "__main__":
    path, digest = ensure(log=lambda m: print(m, file=sys.stderr))
    print("%s %s" % (digest, path))
