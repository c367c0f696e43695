# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Node-to-node streams for the checkpoint and the image: a short-lived HTTP share and its client.

Why HTTP and not rsync over SSH: it needs no trust between nodes (only a per-run token the controller
hands out), no package beyond Python, sends files with sendfile(2), resumes with a Range request, and
lets a relay serve each file as soon as it has verified it. The share listens only while a stage
needs it and exits once every child has said it is done (or after an idle timeout).

Server routes (every request carries the run's token in ``X-DS41F-Token``):
  GET  /ping            liveness, answers this node's name
  GET  /file/<path>     one file of the share (Range: bytes=N- resumes); 503 while a relay lacks it
  GET  /image/<id>      ``docker save <id>`` streamed; 503 until the image is present
  POST /done/<node>     a child has finished
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils.manifest import CHUNK, PART_SUFFIX

TOKEN_HEADER = "X-DS41F-Token"
NODE_HEADER = "X-DS41F-Node"
_RANGE_RE = re.compile(r"^bytes=(\d+)-$")


class TransferError(RuntimeError):
    """A transfer failed; the message names the file or image and the peer."""


# --------------------------------------------------------------------------------------------------
# The share (server side)
# --------------------------------------------------------------------------------------------------


class Share:
    """Serve ``files`` ({relative path: size}) under ``root`` and ``images`` to ``clients``.

    ``ready(path)`` says whether a file may be served now (a relay serves only what it verified).
    ``local_addresses``: serve only connections made to these addresses of this node (the fabric
    ones, plus the management one when the fallback is allowed); empty means any.
    """

    def __init__(self, node, token, clients, root=None, files=None, ready=None, images=(),
                 local_addresses=(), idle_timeout=120, deadline=None, docker="docker"):
        self.node, self.token, self.root = node, token, root
        self.files = dict(files or {})
        self.ready = ready or (lambda rel: True)
        self.images = set(images)
        self.local_addresses = set(local_addresses)
        self.clients = set(clients)
        self.done = set()
        self.served = {}
        self.idle_timeout, self.deadline, self.docker = idle_timeout, deadline, docker
        self.active = 0
        self.last = time.monotonic()
        self.lock = threading.Lock()
        self.reason = None
        self.httpd = None

    # -- bookkeeping ---------------------------------------------------------------------------

    def _count(self, client, nbytes):
        with self.lock:
            self.served[client] = self.served.get(client, 0) + nbytes
            self.last = time.monotonic()

    def _enter(self):
        with self.lock:
            self.active += 1
            self.last = time.monotonic()

    def _leave(self):
        with self.lock:
            self.active -= 1
            self.last = time.monotonic()

    def _watch(self):
        while self.reason is None:
            time.sleep(0.2)
            with self.lock:
                if self.clients and self.clients <= self.done:
                    self.reason = "every child is done"
                elif self.active == 0 and time.monotonic() - self.last > self.idle_timeout:
                    self.reason = "idle for %d s" % self.idle_timeout
                elif self.deadline is not None and time.monotonic() > self.deadline:
                    self.reason = "deadline reached"
        self.httpd.shutdown()

    # -- running -------------------------------------------------------------------------------

    def bind(self, port, host="0.0.0.0"):
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        return self.httpd.server_address[1]

    def serve(self):
        """Serve until every client is done, the share is idle, or the deadline passes."""
        watcher = threading.Thread(target=self._watch, daemon=True)
        watcher.start()
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.httpd.server_close()
        return {"reason": self.reason, "served_bytes": dict(self.served), "done": sorted(self.done),
                "not_done": sorted(self.clients - self.done)}

    def image_present(self, image_id):
        proc = subprocess.run([self.docker, "image", "inspect", "--format", "{{.Id}}", image_id],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return proc.returncode == 0 and proc.stdout.strip() == image_id


def _handler(share):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # the module's result reports what was served
            pass

        def _refuse(self, code, text, retry=False):
            body = (text + "\n").encode()
            self.send_response(code)
            if retry:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _allowed(self):
            if not hmac.compare_digest(self.headers.get(TOKEN_HEADER, ""), share.token):
                self._refuse(403, "wrong or missing token")
                return False
            local = self.connection.getsockname()[0]
            if share.local_addresses and local not in share.local_addresses:
                self._refuse(403, "%s is not an address this share serves on" % local)
                return False
            return True

        def do_GET(self):
            share._enter()
            try:
                if not self._allowed():
                    return
                client = self.headers.get(NODE_HEADER, "?")
                if self.path == "/ping":
                    body = json.dumps({"node": share.node}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path.startswith("/file/"):
                    self._file(urllib.parse.unquote(self.path[len("/file/"):]), client)
                elif self.path.startswith("/image/"):
                    self._image(urllib.parse.unquote(self.path[len("/image/"):]), client)
                else:
                    self._refuse(404, "no such route")
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                share._leave()

        def do_POST(self):
            share._enter()
            try:
                if not self._allowed():
                    return
                if self.path.startswith("/done/"):
                    with share.lock:
                        share.done.add(urllib.parse.unquote(self.path[len("/done/"):]))
                    self._refuse(200, "ok")
                else:
                    self._refuse(404, "no such route")
            finally:
                share._leave()

        def _file(self, rel, client):
            if rel not in share.files:
                self._refuse(404, "%s is not part of this share" % rel)
                return
            if not share.ready(rel):
                self._refuse(503, "%s is not verified here yet" % rel, retry=True)
                return
            size = share.files[rel]
            match = _RANGE_RE.match(self.headers.get("Range", ""))
            offset = int(match.group(1)) if match else 0
            if offset > size:
                self._refuse(416, "range starts past the end of %s" % rel)
                return
            with open(os.path.join(share.root, rel), "rb") as handle:
                self.send_response(206 if match else 200)
                self.send_header("Content-Length", str(size - offset))
                if match:
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (offset, size - 1, size))
                self.end_headers()
                self.wfile.flush()
                sent = offset
                while sent < size:
                    n = os.sendfile(self.connection.fileno(), handle.fileno(), sent, min(size - sent, 1 << 30))
                    if n == 0:
                        break
                    sent += n
                    share._count(client, n)

        def _image(self, image_id, client):
            if image_id not in share.images:
                self._refuse(404, "%s is not part of this share" % image_id)
                return
            if not share.image_present(image_id):
                self._refuse(503, "%s is not loaded here yet" % image_id, retry=True)
                return
            proc = subprocess.Popen([share.docker, "save", image_id], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for block in iter(lambda: proc.stdout.read(CHUNK), b""):
                    self.wfile.write(block)
                    share._count(client, len(block))
            finally:
                proc.stdout.close()
                proc.wait()

    return Handler


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------


class Peer:
    """One parent as a child sees it: the URLs that answered, and how they were reached."""

    def __init__(self, name, bases, via):
        self.name, self.bases, self.via = name, bases, via
        self._next = 0
        self._lock = threading.Lock()

    def base(self):
        """Round-robin over the parent's reachable addresses (both PCIe paths carry streams)."""
        with self._lock:
            self._next = (self._next + 1) % len(self.bases)
            return self.bases[self._next]


def _request(url, token, node, method="GET", headers=None, timeout=30):
    # Node to node over the fabric or the management network: a node's http_proxy must never carry these
    # streams (a proxy cannot reach the fabric), so the proxy settings are off. HTTP errors raise HTTPError.
    return open_url(url, method=method, headers=dict(headers or {}, **{TOKEN_HEADER: token, NODE_HEADER: node}),
                    timeout=timeout, use_proxy=False, follow_redirects="none")


def _url(address, port):
    return "http://%s:%d" % ("[%s]" % address if ":" in address else address, port)


def _ping(address, port, token, node, timeout):
    """None when the share answers; otherwise why not. A refusal (wrong token) is final: TransferError."""
    try:
        with _request(_url(address, port) + "/ping", token, node, timeout=timeout):
            return None
    except urllib.error.HTTPError as exc:
        raise TransferError("%s:%d answers but refuses this run (%s): another share, perhaps from an interrupted "
                            "run, holds the port; it ends by itself once idle" % (
                                address, port, exc.read().decode(errors="replace").strip())) from exc
    except (OSError, urllib.error.URLError) as exc:
        return str(getattr(exc, "reason", exc))


def dial(name, fabric, management, port, token, node, allow_management=True, wait=60, timeout=3):
    """Reach a parent's share: every fabric address that answers, else its management address.

    The share starts at the same moment as this child, so unanswered addresses are retried for ``wait``
    seconds. Returns a ``Peer``; its ``via`` says which network carries the streams, for the report.
    """
    deadline = time.monotonic() + wait
    while True:
        why = {a: _ping(a, port, token, node, timeout) for a in fabric}
        bases = [_url(a, port) for a in fabric if why[a] is None]
        if bases:
            return Peer(name, bases, "fabric %s" % ", ".join(a for a in fabric if why[a] is None))
        if allow_management and management:
            why[management] = _ping(management, port, token, node, timeout)
            if why[management] is None:
                reason = "no fabric address answered" if fabric else "the site has no fabric path to it"
                return Peer(name, [_url(management, port)], "management %s (%s)" % (management, reason))
        if time.monotonic() > deadline:
            raise TransferError("cannot reach %s's share on port %d: %s" % (name, port, ", ".join(
                "%s (%s)" % kv for kv in why.items()) or "no addresses to try"))
        time.sleep(0.5)


def _open_when_ready(peer, path, token, node, wait_timeout, headers=None):
    deadline = time.monotonic() + wait_timeout
    while True:
        try:
            return _request(peer.base() + path, token, node, headers=headers, timeout=60)
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or time.monotonic() > deadline:
                raise TransferError("%s from %s: HTTP %d %s" % (
                    path, peer.name, exc.code, exc.read().decode(errors="replace").strip())) from exc
            time.sleep(0.5)


def _receive(peer, root, entry, token, node, wait_timeout):
    rel, size = entry["path"], entry["size"]
    final = os.path.join(root, rel)
    part = final + PART_SUFFIX
    os.makedirs(os.path.dirname(final), exist_ok=True)
    hasher = hashlib.sha256()
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if offset > size:
        os.unlink(part)
        offset = 0
    if offset:  # resume: the bytes already here feed the hash first
        with open(part, "rb") as handle:
            for block in iter(lambda: handle.read(CHUNK), b""):
                hasher.update(block)
    received = 0
    if offset < size:
        headers = {"Range": "bytes=%d-" % offset} if offset else None
        with _open_when_ready(peer, "/file/" + urllib.parse.quote(rel), token, node, wait_timeout, headers) as resp:
            if offset and resp.status != 206:  # the share ignored the range: start over
                offset, hasher = 0, hashlib.sha256()
            with open(part, "r+b" if offset else "wb") as out:
                out.seek(offset)
                out.truncate()
                for block in iter(lambda: resp.read(CHUNK), b""):
                    out.write(block)
                    hasher.update(block)
                    received += len(block)
                out.flush()
                os.fsync(out.fileno())
    got = os.path.getsize(part)
    if got != size or hasher.hexdigest() != entry["sha256"]:
        os.unlink(part)
        raise TransferError("%s from %s: received %d of %d bytes, sha256 %s (expected %s)" % (
            rel, peer.name, got, size, hasher.hexdigest()[:12], entry["sha256"][:12]))
    os.replace(part, final)
    return received


def fetch_files(peer, root, entries, token, node, streams=4, wait_timeout=600, verified=None):
    """Receive ``entries`` ({path, size, sha256}) from ``peer`` over ``streams`` parallel streams.

    Each file lands under a temporary name, is hashed as it arrives, and takes its real name only if
    size and sha256 match; ``verified(path)`` is called right after (a relay then serves it on).
    A file that arrives corrupt is fetched once more before the run fails naming it.
    Returns {path: bytes received}.
    """
    def one(entry):
        for attempt in (1, 2):
            try:
                got = _receive(peer, root, entry, token, node, wait_timeout)
                break
            except TransferError:
                if attempt == 2:
                    raise
        if verified is not None:
            verified(entry["path"])
        return entry["path"], got

    with ThreadPoolExecutor(max_workers=max(1, streams)) as pool:
        return dict(pool.map(one, entries))


def load_image(peer, image_id, token, node, docker="docker", wait_timeout=600):
    """Stream ``docker save`` from ``peer`` straight into this node's ``docker load``. Returns bytes."""
    with _open_when_ready(peer, "/image/" + urllib.parse.quote(image_id), token, node, wait_timeout) as resp, \
            tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([docker, "load"], stdin=subprocess.PIPE, stdout=log, stderr=log)
        received = 0
        try:
            for block in iter(lambda: resp.read(CHUNK), b""):
                proc.stdin.write(block)
                received += len(block)
        except BrokenPipeError:
            pass
        finally:
            proc.stdin.close()
            proc.wait()
        log.seek(0)
        output = log.read().decode(errors="replace").strip()
    if proc.returncode != 0:
        raise TransferError("docker load of %s from %s failed (%d): %s" % (
            image_id, peer.name, proc.returncode, output))
    return received


def done(peer, token, node):
    """Tell a parent this child has finished (so its share can end); errors do not matter here."""
    try:
        with _request(peer.bases[0] + "/done/" + urllib.parse.quote(node), token, node, method="POST", timeout=5):
            pass
    except (OSError, urllib.error.URLError):
        pass
