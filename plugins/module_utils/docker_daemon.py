# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Whether a node's Docker engine answers: its unit's state and a ping of its API socket, and the finding and
message when it does not. The image and serve stages ask before any Docker call, so a stopped engine is a named
error with its fix instead of the Docker SDK's connection traceback. Pure Python but for the socket."""

from __future__ import annotations

import json
import socket
from urllib.parse import quote

PING = b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n"
UNIT = "docker.service"
SOCKET = "/var/run/docker.sock"


def ping(path, timeout):
    """(True, '') when the API on the unix socket ``path`` answers /_ping with 200 within ``timeout`` s, else
    (False, what was seen)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        sock.sendall(PING)
        head = sock.recv(64).decode("latin-1")
    except TimeoutError:
        return False, "no answer on %s in %s s" % (path, timeout)
    except OSError as exc:
        return False, "%s: %s" % (path, exc.strerror or exc)
    finally:
        sock.close()
    if head.split(" ", 2)[1:2] == ["200"]:
        return True, ""
    return False, "%s answered %r" % (path, head.splitlines()[0] if head else "nothing")


def unit_state(run, unit=UNIT):
    """The unit's UnitFileState and ActiveState (``systemctl show``), or {} where systemd is not there to ask.
    ``run(argv)``: (rc, stdout, stderr), as the hardware layer's ``Host.run`` (rc 127 without systemctl)."""
    rc, out, _ = run(["systemctl", "show", "--property=UnitFileState,ActiveState", "--", unit])
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line) if rc == 0 else {}


def stopped(state):
    """Why not to ask the engine anything, or None: its unit (``unit_state``) is stopped, and a look at a
    socket-activated engine's socket (docker.socket) would start it - a reading must change nothing."""
    if state and state.get("ActiveState") not in ("active", "activating", "reloading"):
        return "not asked: its unit is %s, and a look at its socket would start it" % (
            state.get("ActiveState") or "unknown")
    return None


def answers(state, path, timeout):
    """``ping``, unless ``stopped(state)`` says not to ask."""
    why = stopped(state)
    return (False, why) if why else ping(path, timeout)


def _get(path, url, timeout):
    """(status, body) of one HTTP/1.0 GET on the unix socket ``path``: the engine closes the connection after it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        sock.sendall(("GET %s HTTP/1.0\r\nHost: docker\r\n\r\n" % url).encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1:2]
    return (int(status[0]) if status and status[0].isdigit() else 0), body


def image(path, ref, timeout):
    """What the engine holds under ``ref`` (a tag or an image ID), as the few fields the stages read (Id, RepoTags,
    Config.Labels), or None when it holds nothing by that name. Raises OSError when the engine does not say."""
    status, body = _get(path, "/images/%s/json" % quote(ref, safe="/:@"), timeout)
    if status == 404:
        return None
    if status != 200:
        raise OSError("GET /images/%s/json answered %s: %s" % (ref, status or "nothing",
                                                                  body[:200].decode("utf-8", "replace")))
    info = json.loads(body)
    return {"Id": info.get("Id"), "RepoTags": info.get("RepoTags") or [],
            "Config": {"Labels": (info.get("Config") or {}).get("Labels") or {}}}


def describe(state):
    """A unit's state as the host baseline's unit policy words it ('enabled, active'), so the doctor folds the
    stage's finding into the baseline's row of the same unit."""
    return "%s, %s" % (state.get("UnitFileState") or "-", state.get("ActiveState") or "-")


def verdict(node, unit, state, answering, seen):
    """(message or None, findings) for one node: None and no findings when the engine answers."""
    if answering:
        return None, []
    found = describe(state)
    if state.get("ActiveState") == "active":  # running, but its API does not answer: a wedged engine
        found = "%s, not answering (%s)" % (found, seen)
        fix = "systemctl restart %s; if it hangs, read journalctl -u %s" % (unit, unit)
        msg = "docker is running on %s but does not answer (%s): %s" % (node, seen, fix)
    else:
        fix = "systemctl enable --now %s" % unit
        msg = "docker is not running on %s (%s; %s): systemctl start docker (ds41f run host_baseline keeps it " \
              "enabled and running)" % (node, found, seen)
    # The host baseline owns the unit: the finding is its row, whichever stage met it first.
    return msg, [{"node": node, "stage": "host_baseline", "setting": unit, "expected": "enabled, active",
                  "found": found, "fix": fix}]
