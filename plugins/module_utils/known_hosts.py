# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A site's pinned SSH host keys: the ``known_hosts`` file beside its site file (OpenSSH's format, sshd(8)
"SSH_KNOWN_HOSTS FILE FORMAT"). Read by the inventory plugin, written by `ds41f hostkeys` and the lab, and the
source of the known_hosts the serve stage gives the head's watchdog. Pure Python."""

from __future__ import annotations

import base64
import hashlib
import hmac

FILE_NAME = "known_hosts"


def host_token(address, port=22):
    """How known_hosts names a host: its address, or ``[address]:port`` off port 22."""
    port = int(port or 22)
    return str(address) if port == 22 else "[%s]:%d" % (address, port)


def parse(text):
    """[{hosts, type, key, comment, line}] of the entries of a known_hosts text; comments, blank lines and marked
    entries (@cert-authority, @revoked) are left out."""
    entries = []
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) < 3 or words[0].startswith(("#", "@")):
            continue
        entries.append({"hosts": words[0], "type": words[1], "key": words[2],
                        "comment": " ".join(words[3:]), "line": line.strip()})
    return entries


def _hashed_match(field, token):
    """A hashed entry (ssh-keygen -H, ``|1|salt|hash``): HMAC-SHA1 of the host name keyed by the salt."""
    try:
        _, magic, salt, digest = field.split("|")
        if magic != "1":
            return False
        mac = hmac.new(base64.b64decode(salt), token.encode(), hashlib.sha1).digest()
        return hmac.compare_digest(base64.b64encode(mac).decode(), digest)
    except (ValueError, TypeError):
        return False


def names(entry, token):
    """Whether the entry is about this host (a plain list of names, or a hashed one)."""
    field = entry["hosts"]
    if field.startswith("|"):
        return _hashed_match(field, token)
    return token in field.split(",")


def keys_of(text, token):
    """{key type: base64 key} pinned for one host."""
    return {e["type"]: e["key"] for e in parse(text) if names(e, token)}


def lines_for(text, tokens):
    """The entries of the given hosts, as lines, in file order."""
    return [e["line"] for e in parse(text) if any(names(e, t) for t in tokens)]


def entry(token, key_type, key, comment=""):
    return " ".join(filter(None, (token, key_type, key, comment)))


def fingerprint(key):
    """OpenSSH's SHA256 fingerprint of a base64 key (what `ssh-keygen -lf` prints on the node's console)."""
    digest = hashlib.sha256(base64.b64decode(key)).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def without(text, token):
    """The known_hosts text less the entries of one host (comments and other hosts kept as they are)."""
    kept = [line for line in (text or "").splitlines()
            if not any(names(e, token) for e in parse(line))]
    return "\n".join(kept) + ("\n" if kept else "")
