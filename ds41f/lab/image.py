"""The lab node image, built from Debian packages (no registry is reachable)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from ds41f.lab import podman
from ds41f.paths import LAB_STATE

PACKAGES = Path(__file__).with_name("labnode-packages.txt")
SUITE = "bookworm"
# Units that would reach outside a privileged container: sysctl.d, modules-load.d and modprobe@ load into
# the host kernel, a udev coldplug re-triggers the host's devices, gettys and binfmt need a console or the host.
MASKED_UNITS = (
    "modprobe@.service",
    "getty@tty1.service", "console-getty.service", "proc-sys-fs-binfmt_misc.automount",
    "systemd-binfmt.service", "systemd-sysctl.service", "systemd-modules-load.service",
    "systemd-udev-trigger.service", "systemd-udev-settle.service", "apt-daily.timer",
    "apt-daily-upgrade.timer", "e2scrub_reap.service", "e2scrub_all.timer",
)
# Installed but not started at boot: a scenario that needs one starts it on one node (nginx: the serve stage
# runs its own unit of it on the head).
DISABLED_UNITS = ("docker-registry.service", "nginx.service")
IMAGE_CHANGES = ('CMD ["/sbin/init"]', "ENV container=podman", "STOPSIGNAL SIGRTMIN+3", "VOLUME /var/lib/docker")


def packages():
    return [line.strip() for line in PACKAGES.read_text().splitlines() if line.strip() and not line.startswith("#")]


def tag():
    recipe = "\n".join([SUITE, *packages(), *MASKED_UNITS, *DISABLED_UNITS, *IMAGE_CHANGES]).encode()
    return "localhost/ds41f-labnode:" + hashlib.sha256(recipe).hexdigest()[:12]


def ensure(log=print):
    """Return the image name, building it first if it is missing (about 2 minutes, ~600 MB)."""
    name = tag()
    if podman.exists("image", name):
        return name
    cache = LAB_STATE / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / ("labnode-%s.tar" % name.rsplit(":", 1)[1])
    hook = 'chroot "$1" systemctl mask %s && chroot "$1" systemctl disable %s' % (
        " ".join(MASKED_UNITS), " ".join(DISABLED_UNITS))
    log("lab: building %s from Debian %s packages (about 2 minutes)" % (name, SUITE))
    start = time.monotonic()
    cmd = ["mmdebstrap", "--variant=apt", "--include=" + ",".join(packages()),
           "--customize-hook=" + hook, SUITE, str(tarball)]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise podman.LabError("mmdebstrap failed:\n%s\nFix: apt-get install -y mmdebstrap, and check that "
                              "Debian's mirror is reachable." % tail)
    args = ["import"]
    for change in IMAGE_CHANGES:
        args += ["--change", change]
    podman.run(*args, tarball, name)
    tarball.unlink()
    log("lab: image %s ready in %.0f s" % (name, time.monotonic() - start))
    return name


if __name__ == "__main__":  # python -m ds41f.lab.image: build only
    print(ensure(log=lambda m: print(m, file=sys.stderr)))
