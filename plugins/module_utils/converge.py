# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The shape every converging module of this collection has: read, plan, write only outside check mode.

    plan = Plan(module)
    found = read_something()
    if found != wanted:
        plan.change("netdev enp1s0f0np0 mtu", wanted, found, "ip link set enp1s0f0np0 mtu 9000",
                    lambda: set_mtu(...))
    module.exit_json(**plan.result())

``changed`` is ``bool(actions)``; ``diff`` shows each setting before and after; ``drift`` is the list the
doctor's drift table reads (setting, expected, found, the ``fix`` an operator types when it is not the stage's
own run, the ``action`` that run would take, and as data the ``object`` the row is about and, for a consequence,
the ``cause`` object it follows from: see ``obj``). In check mode nothing is called.

A row about one part of its object says which part as data, ``aspect``: for a CX7 netdev (object kind ``link``, as
``manages`` declares it) ``link`` (absent or administratively down), ``carrier``, ``mtu`` or ``address`` are a fabric
path's causes, strongest first; ``reachability`` is a path's failed pings (a consequence: its ``cause`` names the
object that explains it where the producer knows one); any other aspect (``arp_ignore``, ``gid``, ``speed``,
``cable``) is a finding about the link that a cause on its path explains. ``path`` is the path's CIDR. The doctor
(``drift.dedupe``) folds a path by these, never by a row's words.
"""

from __future__ import annotations

import grp
import os
import pwd


def obj(kind, name, node=None):
    """An object a row is about, as data: ``{kind, name}``, plus ``node`` when it is on another node than the one
    the module runs on. Folding and the mutation test compare these, never a row's words."""
    out = {"kind": str(kind), "name": str(name)}
    if node:
        out["node"] = str(node)
    return out


def _object(value):
    """``obj`` from a (kind, name[, node]) tuple or a dict; None stays None."""
    if value is None or isinstance(value, dict):
        return value
    return obj(*value)


def _text(value):
    if value is None:
        return "(absent)\n"
    text = value if isinstance(value, str) else repr(value)
    return text if text.endswith("\n") else text + "\n"


class Plan:
    def __init__(self, module, fix=None):
        """``fix``: what an operator types to mend any row of this plan (``ds41f run firewall``); without it the
        doctor gives the row's stage (``ds41f run <stage>``). A row's ``action`` says what that run would do."""
        self.module = module
        self.fix = fix
        self.actions = []
        self.drift = []
        self.diffs = []
        self.managed = []

    @property
    def check_mode(self):
        return self.module.check_mode

    def change(self, setting, expected, found, action, apply=None, fix=None, row=True, about=None, cause=None,
               diff=None, path=None, aspect=None):
        """Record one difference and the action that removes it; run ``apply`` unless in check mode. ``row=False``:
        bookkeeping that only goes with the changes beside it (a record of the prior states they replace), so its
        action and diff, and no drift row of its own (the changes' rows are the causes). ``about``: the object
        the row is about ((kind, name[, node]) or ``obj``); ``cause``: for a consequence, the object whose own
        row explains it (the doctor then shows only that row). ``diff``: (before, after) when the diff should show
        more than the row's found and expected (a whole table beside the row's summary of it). ``path``: the fabric
        path (its CIDR) the row concerns, for the doctor's picture and its folding of that path's failed pings.
        ``aspect``: which part of ``about`` differs (``mtu`` of a link: see the module's docstring), so that the
        doctor tells a path's cause from its echoes as data."""
        if row:
            entry = {"setting": setting, "expected": expected, "found": found, "fix": fix or self.fix,
                     "action": action}
            for key, value in (("object", _object(about)), ("cause", _object(cause)), ("path", path),
                               ("aspect", aspect)):
                if value:
                    entry[key] = value
            self.drift.append(entry)
        before, after = diff or (found, expected)
        self.diffs.append({"before_header": setting, "after_header": setting,
                           "before": _text(before), "after": _text(after)})
        self.actions.append(action)
        if apply is not None and not self.module.check_mode:
            apply()

    def manages(self, kind, name, **state):
        """Declare one object this module manages (in sync or not): the doctor lists them (doctor.json
        ``managed``), and the mutation test (tests/mutation/) changes each and expects the doctor to name it."""
        entry = dict(state, kind=kind, name=name)
        if entry not in self.managed:
            self.managed.append(entry)

    def file_attributes(self, path, mode, owner="root", group="root"):
        """Declare a file this module writes and keep its mode and owner: one change when either differs (a
        missing file is the content's change, not this one)."""
        self.manages("file", path, mode=mode, owner=owner, group=group)
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return
        have = "%04o %s:%s" % (stat.st_mode & 0o7777, _name(pwd.getpwuid, stat.st_uid),
                               _name(grp.getgrgid, stat.st_gid))
        want = "%s %s:%s" % (mode, owner, group)
        if have != want:
            def apply():
                os.chmod(path, int(mode, 8))
                os.chown(path, pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid)
            self.change("%s attributes" % path, want, have, "chmod %s %s; chown %s:%s %s" % (
                mode, path, owner, group, path), apply, about=("file", path))

    def result(self, **extra):
        out = {"changed": bool(self.actions), "actions": self.actions, "drift": self.drift}
        if self.managed:
            out["managed"] = self.managed
        if self.diffs:
            out["diff"] = self.diffs
        out.update(extra)
        return out


def write_file(path, content, mode=0o644):
    """Write a whole file at once (a temporary beside it, then renamed), its folder made first when missing."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = path + ".ds41f-tmp"
    with open(tmp, "w") as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:  # an id without a name
        return str(number)
