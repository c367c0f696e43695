"""A thin wrapper over the podman CLI with the lab's own containers.conf."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

CONTAINERS_CONF = Path(__file__).with_name("containers.conf")


class LabError(RuntimeError):
    """A lab operation failed; the message says what and how to fix it."""


def env():
    return dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))


def run(*args, check=True, capture=True, input=None):
    proc = subprocess.run(["podman", *map(str, args)], env=env(), text=True, input=input,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE if capture else None)
    if check and proc.returncode != 0:
        raise LabError("podman %s failed (%d): %s" % (" ".join(map(str, args[:3])), proc.returncode,
                                                      (proc.stderr or "").strip()))
    return proc


def exists(kind, name):
    return run(kind, "exists", name, check=False).returncode == 0


def inspect(name, fmt):
    return run("inspect", "-f", fmt, name).stdout.strip()


def containers(label):
    out = run("ps", "-a", "--filter", "label=%s" % label, "--format", "json").stdout
    return json.loads(out or "[]")


def exec_(name, *cmd, check=True, input=None):
    return run("exec", "-i" if input is not None else "-t=false", name, *cmd, check=check, input=input)
