"""The Debian packages `make demo` and `make test` need on the controller: install the missing ones (as root,
with apt-get) or stop at once with the one command to run. Standard library only: it runs before .venv exists.

    python3 ds41f/lab/prereqs.py           # install what is missing when root, else print the command; exit 2
    python3 ds41f/lab/prereqs.py --check   # never install: list what is missing and the command; exit 2
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

# Debian package -> the commands that show it is there (None: only dpkg can tell).
PACKAGES = {
    "podman": ["podman"],            # the lab's container engine
    "runc": ["runc"],                # its runtime (crun fails on hybrid cgroups)
    "mmdebstrap": ["mmdebstrap"],    # the lab node image and the engine's base, from Debian packages
    "iproute2": ["ip"],              # the lab's veth cables
    "iputils-ping": ["ping"],
    "openssh-client": ["ssh", "ssh-keygen"],  # how the playbooks reach the lab nodes
    "python3-venv": None,            # .venv (python3 -m venv needs ensurepip, which Debian ships in it)
}


def dpkg_installed(package, run=subprocess.run):
    try:
        proc = run(["dpkg-query", "--show", "--showformat=${Status}", package], capture_output=True, text=True)
    except OSError:
        return False
    return proc.returncode == 0 and proc.stdout.strip().endswith(" installed")


def missing(which=shutil.which, installed=dpkg_installed):
    """Packages not there, in PACKAGES order: none of their commands on PATH and dpkg does not list them."""
    return [pkg for pkg, commands in PACKAGES.items()
            if not (commands and all(which(c) for c in commands)) and not installed(pkg)]


def apt_command(packages):
    return "apt-get install -y " + " ".join(packages)


def fix_for(command):
    """The apt command that brings a missing command (podman, mmdebstrap, ...)."""
    name = os.path.basename(str(command))
    found = [pkg for pkg, commands in PACKAGES.items() if commands and name in commands]
    return apt_command(found or list(PACKAGES))


def main(argv=None, which=shutil.which, installed=dpkg_installed, run=subprocess.run, euid=os.geteuid):
    argv = sys.argv[1:] if argv is None else argv
    need = missing(which, installed)
    if not need:
        return 0
    can_install = euid() == 0 and which("apt-get") and "--check" not in argv
    if not can_install:
        sudo = "" if euid() == 0 else "sudo "
        print("missing Debian packages: %s. Fix: %sapt-get update && %s%s" % (
            ", ".join(need), sudo, sudo, apt_command(need)), file=sys.stderr)
        return 2
    print("== installing the missing Debian packages: %s" % " ".join(need), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv_apt in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq"] + need):
        if run(argv_apt, env=env).returncode != 0:
            print("%s failed. Fix: run `apt-get update && %s` and look at its error." % (
                " ".join(argv_apt[:2]), apt_command(need)), file=sys.stderr)
            return 2
    still = missing(which, installed)
    if still:
        print("still missing after apt-get: %s" % ", ".join(still), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
