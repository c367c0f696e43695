# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The rows and the repair for files a stage did not write that change what its own file sets.

A stage that writes into a folder its reader merges (``config_layers``) reads the whole merge: each setting of
its file is declared (kind ``setting``, named ``<folder>: <setting>``, so the mutation test drops a foreign file
into that folder), and every entry of another file that changes the outcome is a row about that file, the cause:

    kernel.panic (systemd-sysctl) | 30, as /etc/sysctl.d/95-ds41f-recovery.conf sets it
                                  | 0, in /etc/sysctl.d/99-local.conf line 3, read after it

The repair turns off exactly those lines, each commented out under a line that says why; the rest of the file
stays as it was, and a file is never removed or renamed. A package's file (under /usr or /lib) is not edited:
a copy of it with the lines turned off goes to /etc under the same name, which its reader reads instead. A file
that sets the stage's value, or comes where it cannot win, is no row.
"""

from __future__ import annotations

import os
import posixpath
import tempfile

from ansible_collections.dgxspark.ds41f.plugins.module_utils import config_layers as layers


def declare(plan, layout, ours):
    """Declare each setting of the stage's file as an object of its folder (what the mutation test overrides)."""
    seen = set()
    for entry in ours:
        if entry.key not in seen:
            seen.add(entry.key)
            plan.manages("setting", "%s: %s" % (layout.folder, entry.name), folder=layout.folder,
                         order=layout.order, layout=layers.layout_name(layout), key=entry.name, value=entry.value)


def audit(plan, host, path, content):
    """Plan the repair of every foreign entry that overrides the file ``path`` (to hold ``content``), one row per
    setting and file, about that file. Returns [(ours, theirs, the file that holds theirs)]; [] for a file no
    reader merges."""
    layout = layers.layout_for(path)
    if layout is None:
        return []
    declare(plan, layout, layout.own(content))
    found = layers.overrides(host, layout, content)
    by_file = {}
    for mine, theirs in found:
        by_file.setdefault(theirs.path, []).append((mine, theirs))
    out = []
    for listed, pairs in by_file.items():
        real = layers.resolve(host, listed)
        target = layers.editable(listed) if layers.editable(real) != real else real
        text = host.read(real) or ""
        lines = sorted({theirs.line for _, theirs in pairs})
        new = layers.turned_off(layout, text, [theirs for _, theirs in pairs], lambda entries: (
            "turned off by ds41f: %s sets %s" % (path, ", ".join(sorted({e.name for e in entries})))))
        action = "turn off line %s of %s%s" % (", ".join(map(str, lines)), real,
                                               "" if target == real else " (in %s, read instead)" % target)
        for i, (mine, theirs) in enumerate(pairs):
            shown = "" if listed == real else " (as %s)" % listed
            plan.change(layout.label(mine), "%s, as %s sets it" % (mine.value, path),
                        "%s, in %s line %d%s, %s" % (theirs.value, real, theirs.line, shown, _why(layout, theirs)),
                        action, (lambda t=target, n=new, r=real: write_like(host, t, n, r)) if i == 0 else None,
                        about=("file", real), diff=(text, new) if i == 0 else None)
            out.append((mine, theirs, real))
    return out


def _why(layout, entry):
    if entry.value == layers.NO_LIMITS:
        return "which sets no limit at all for that user"
    return "read before it (sshd keeps the first value)" if layout.order == "first" else "read after it"


def write_like(host, path, content, like):
    """Write ``path`` whole (a temporary beside it, then renamed) with the mode and owner of ``like``."""
    real = host.path(path)
    os.makedirs(posixpath.dirname(real), mode=0o755, exist_ok=True)
    stat = os.stat(host.path(like))
    fd, temp = tempfile.mkstemp(dir=posixpath.dirname(real), prefix=".ds41f-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
        os.chmod(temp, stat.st_mode & 0o7777)
        if os.geteuid() == 0:
            os.chown(temp, stat.st_uid, stat.st_gid)
        os.replace(temp, real)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)

