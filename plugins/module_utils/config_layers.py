# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""What the system computes from a folder of configuration files, and which file decides each setting.

A stage writes one file into a folder that the system merges with every other file there and in its sibling
folders: sysctl.d, modprobe.d, limits.d, sshd_config.d, a unit's drop-ins, system.conf.d. What takes effect is
the merge, so a file nobody declared can undo the stage's setting at the next boot or reload. Each ``Layout``
lists the files its reader reads, in the order it reads them, and their settings (``Entry``), by that reader's
own rules:

- systemd-sysctl, kmod (modprobe.d) and systemd's drop-ins: ``*.conf`` from /etc, /run, /usr/local/lib, /usr/lib
  (and /lib), one file per name (the first folder's), all sorted by name; a later assignment wins. A key that
  names a glob never beats an explicit one (systemd-sysctl), so globs are left out.
- pam_limits: /etc/security/limits.conf, then limits.d/*.conf by name; a user's own line (its name or a uid
  range) beats group and ``*`` lines whatever their order, and among the user's lines the later wins. A
  ``<user> -`` line means no limits at all for that user.
- sshd: /etc/ssh/sshd_config with its ``Include`` globs expanded where they stand; the first value wins; lines
  after a ``Match`` (other than ``Match all``) are not global.

``overrides`` names the foreign entries that change what the stage's own file sets; ``turned_off`` is a file's
text with those lines commented out. Pure Python over a ``hardware.host.Host`` (a filesystem root), so it runs
the same against a node and against a folder in a unit test (tests/unit/host/test_config_layers.py checks the
order against systemd's own ``systemd-analyze cat-config`` and ``verify``).
"""

from __future__ import annotations

import collections
import fnmatch
import os
import posixpath
import pwd
import re

# The folders systemd's conf_files and kmod read a *.d name from, most important first.
CONF_DIRS = ("/etc/", "/run/", "/usr/local/lib/", "/usr/lib/", "/lib/")
# systemd's unit search path (systemd-analyze unit-paths), most important first.
UNIT_PATHS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
              "/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
              "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
              "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system",
              "/run/systemd/generator.late")
UNIT_TYPES = ("service", "socket", "timer", "path", "mount", "automount", "swap", "target", "slice", "scope")
VENDOR = ("/usr/local/lib/", "/usr/lib/", "/lib/")  # a package's folders: its files are never edited
NO_LIMITS = "(no limits)"

# key: what the reader compares (kernel/panic, logingracetime); name: as a person writes it (kernel.panic).
Entry = collections.namedtuple("Entry", "key name value path line")


class Layout:
    """One reader's folder: ``files(host)`` it reads and their ``entries(host, ours)`` in the order it reads them,
    ``own(text)``: the entries of the stage's file (``ours``)."""

    reader = ""
    order = "last"  # "last": a later assignment wins; "first": the first one does (sshd)

    def __init__(self, path):
        self.path = path
        self.folder = posixpath.dirname(path)

    def own(self, text):
        return self.parse(text, self.path)

    def entries(self, host, ours):
        """Every setting of every file the reader reads, in the order it reads them."""
        return [e for path in self.files(host) for e in self.parse(_read(host, path), path)]

    def same(self, key, a, b):
        return " ".join(str(a).split()) == " ".join(str(b).split())

    def label(self, entry):
        """The setting as a row names it."""
        return "%s (%s)" % (entry.name, self.reader)

    def off(self, text, entries):
        """The line ``text`` turned off because of ``entries`` (the settings of it that override): commented out."""
        return ["#" + text]


def _lines(text):
    """(number, line) of every line that says something: comments and blank lines left out."""
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if line and line[0] not in "#;":
            yield number, line


def resolve(host, path):
    """The file a path names once its own symlinks are followed, within the host's root (99-sysctl.conf ->
    ../sysctl.conf is /etc/sysctl.conf)."""
    for _ in range(8):
        real = host.path(path)
        if not os.path.islink(real):
            return path
        target = os.readlink(real)
        path = target if target.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(path),
                                                                                       target))
    return path


def editable(path):
    """Where a file is turned off: in place, or for a package's file (under /usr or /lib) the file of the same name
    in /etc that takes its place (systemd, kmod and systemd-sysctl read a name from /etc first)."""
    for prefix in VENDOR:
        if path.startswith(prefix):
            return "/etc/" + path[len(prefix):]
    return path


def _masked(host, path):
    return os.path.islink(host.path(path)) and resolve(host, path) == "/dev/null"


def conf_files(host, folders, suffix=".conf"):
    """systemd's (and kmod's) list of files: each name once, from the first folder that has it (a link to
    /dev/null included: it masks the name), sorted by name."""
    host = host if isinstance(host, Overlay) else Overlay(host, {})
    chosen = {}
    for folder in folders:
        for name in host.listdir(folder):
            path = posixpath.join(folder, name)
            if name.startswith(".") or not name.endswith(suffix) or name in chosen:
                continue
            if _masked(host, path) or host.isfile(path):
                chosen[name] = path
    return [chosen[name] for name in sorted(chosen)]


def _read(host, path):
    return "" if _masked(host, path) else host.read(path) or ""


class Sysctl(Layout):
    reader = "systemd-sysctl"

    def files(self, host):
        return conf_files(host, [d + "sysctl.d" for d in CONF_DIRS])

    @staticmethod
    def key(name):
        """The /proc/sys path a name writes (sysctl.d(5): the first separator decides whether dots or slashes
        separate its parts)."""
        if name.find("/") != -1 and (name.find(".") == -1 or name.find("/") < name.find(".")):
            return name
        return name.translate(str.maketrans("./", "/."))

    def parse(self, text, path):
        out = []
        for number, line in _lines(text):
            name, sep, value = line.lstrip("-").partition("=")
            name = name.strip()
            if sep and name and not any(c in name for c in "*?["):
                out.append(Entry(self.key(name), name, value.strip(), path, number))
        return out


class Modprobe(Layout):
    reader = "modprobe"

    def files(self, host):
        return conf_files(host, [d + "modprobe.d" for d in CONF_DIRS])

    def parse(self, text, path):
        out = []
        for number, line in _lines((text or "").replace("\\\n", " ")):
            words = line.split()
            if len(words) > 2 and words[0] == "options":
                module = words[1].replace("-", "_")
                for word in words[2:]:
                    param, _, value = word.partition("=")
                    name = "%s %s" % (module, param.replace("-", "_"))
                    out.append(Entry(name, name, value.strip('"'), path, number))
        return out

    def off(self, text, entries):
        """An options line keeps the parameters that do not override: modprobe.d has no comment after a value."""
        gone = {e.name.split()[1] for e in entries}
        words = text.split()
        kept = [w for w in words[2:] if w.partition("=")[0].replace("-", "_") not in gone]
        return ["#" + text] + (["options %s %s" % (words[1], " ".join(kept))] if kept else [])


class Limits(Layout):
    reader = "pam_limits"
    MAIN = "/etc/security/limits.conf"

    def files(self, host):
        return [self.MAIN] + sorted(posixpath.join("/etc/security/limits.d", n)
                                    for n in host.listdir("/etc/security/limits.d")
                                    if n.endswith(".conf") and not n.startswith("."))

    def entries(self, host, ours):
        users = {e.name.split()[0] for e in ours}
        return [e for path in self.files(host) for e in self.parse(host.read(path) or "", path, users)]

    def own(self, text):
        return self.parse(text, self.path, None)

    def same(self, key, a, b):
        return _limit(a) == _limit(b)

    def parse(self, text, path, users):
        """The lines of ``users`` (None: any user's) as their own lines (by name or uid range); a ``<user> -`` line is
        an entry of value NO_LIMITS for each item (key ``<user> * *``)."""
        out = []
        for number, line in _lines(text):
            words = line.split("#")[0].split()
            for user in ([words[0]] if users is None else sorted(u for u in users if _user_line(words[0], u))):
                if len(words) == 2 and words[1] == "-":
                    out.append(Entry("%s * *" % user, "%s -" % user, NO_LIMITS, path, number))
                elif len(words) == 4:
                    for kind in (("soft", "hard") if words[1] == "-" else (words[1].lower(),)):
                        name = "%s %s %s" % (user, kind, words[2].lower())
                        out.append(Entry(name, name, words[3], path, number))
        return out


def _user_line(domain, user):
    """Whether a limits line's domain is ``user``'s own (its name, or a uid range holding its uid)."""
    if domain == user:
        return True
    low, sep, high = domain.partition(":")
    if not sep or domain[0] in "@%":
        return False
    try:
        uid = pwd.getpwnam(user).pw_uid
        return (not low or int(low) <= uid) and (not high or uid <= int(high)) and (low or high == str(uid))
    except (KeyError, ValueError):
        return False


def _limit(value):
    value = str(value).lower()
    return "unlimited" if value in ("unlimited", "infinity", "-1") else value


class Sshd(Layout):
    reader = "sshd"
    order = "first"
    MAIN = "/etc/ssh/sshd_config"

    def entries(self, host, ours):
        out = []
        self._walk(host, self.MAIN, True, out, 0)
        return out

    def parse(self, text, path):
        return [e for e in self._settings(text, path, True) if isinstance(e, Entry)]

    def same(self, key, a, b):
        return _sshd_value(a) == _sshd_value(b)

    @staticmethod
    def _settings(text, path, active):
        """Entries, ('include', patterns) and ('match', active) in file order."""
        for number, line in _lines(text):
            found = re.match(r"(\S+?)(?:\s*=\s*|\s+)(.*)$", line)
            if not found:
                continue
            name, value = found.group(1), found.group(2).strip()
            if name.lower() == "match":
                active = value.lower() == "all"
                yield ("match", active)
            elif name.lower() == "include":
                yield ("include", value.split(), active)
            elif active:
                yield Entry(name.lower(), name, value, path, number)

    def _walk(self, host, path, active, out, depth):
        if depth > 16:  # sshd's own limit on nested Include
            return
        for item in self._settings(host.read(path) or "", path, active):
            if isinstance(item, Entry):
                out.append(item)
            elif item[0] == "include":
                for pattern in item[1]:
                    for included in _glob(host, pattern if pattern.startswith("/") else "/etc/ssh/" + pattern):
                        self._walk(host, included, item[2], out, depth + 1)

    def read_by_sshd(self, host):
        """Whether sshd reads the stage's file at all (sshd_config includes its folder)."""
        seen = []
        self._paths(host, self.MAIN, seen, 0)
        return self.path in seen

    def _paths(self, host, path, seen, depth):
        seen.append(path)
        if depth > 16:
            return
        for item in self._settings(host.read(path) or "", path, True):
            if isinstance(item, tuple) and item[0] == "include":
                for pattern in item[1]:
                    for included in _glob(host, pattern if pattern.startswith("/") else "/etc/ssh/" + pattern):
                        self._paths(host, included, seen, depth + 1)


def _sshd_value(value):
    """A value as sshd -T shows it: times (30, 30s, 1m30s) in seconds, words in lower case."""
    text = " ".join(str(value).split()).lower()
    parts = re.findall(r"(\d+)([smhdw]?)", text)
    if parts and re.fullmatch(r"(\d+[smhdw]?)+", text):
        return sum(int(n) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[u] for n, u in parts)
    return text


def _glob(host, pattern):
    folder, name = posixpath.split(pattern)
    if not any(c in name for c in "*?["):
        return [pattern] if host.exists(pattern) else []
    return [posixpath.join(folder, n) for n in host.listdir(folder) if fnmatch.fnmatchcase(n, name)
            and not n.startswith(".")]


class SystemdIni(Layout):
    """A file in systemd's unit syntax: [Section] and Key=Value lines; key "[Section] Key"."""

    def parse(self, text, path):
        out, section = [], ""
        for number, line in _lines((text or "").replace("\\\n", " ")):
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
                continue
            name, sep, value = line.partition("=")
            if sep:
                key = "[%s] %s" % (section, name.strip())
                out.append(Entry(key, key, value.strip(), path, number))
        return out

    def same(self, key, a, b):
        name = key.split()[-1]
        if name.endswith("Sec"):
            return _timespan(a) == _timespan(b)
        if name.startswith(("Memory", "Limit")) or name.endswith("Max"):
            return _size(a) == _size(b)
        return " ".join(str(a).split()) == " ".join(str(b).split())


class Unit(SystemdIni):
    """A unit: its unit file (the first of the search path), then its drop-ins (systemd's
    unit_file_find_dropin_paths): the folders of its name and of its dashed prefixes in each unit folder, then
    its type's folder (service.d) in each; one file per name, the first folder's; all sorted by name."""

    reader = "systemd"

    def __init__(self, path, unit):
        super().__init__(path)
        self.unit = unit
        self.folder = "/etc/systemd/system/%s.d" % unit

    def dropin_names(self):
        """The unit's own folder, then its dashed prefixes' (longest first), then its type's."""
        stem, _, kind = self.unit.rpartition(".")
        parts = stem.split("-")
        return [self.unit + ".d"] + ["%s-.%s.d" % ("-".join(parts[:i]), kind) for i in range(len(parts) - 1, 0, -1)] + [
            kind + ".d"]

    def files(self, host):
        fragment = next((posixpath.join(p, self.unit) for p in UNIT_PATHS
                         if host.exists(posixpath.join(p, self.unit)) or _masked(host, posixpath.join(p, self.unit))),
                        None)
        names = self.dropin_names()
        folders = [posixpath.join(p, n) for p in UNIT_PATHS for n in names[:-1]] + [
            posixpath.join(p, names[-1]) for p in UNIT_PATHS]
        return ([fragment] if fragment else []) + conf_files(host, folders)

    def label(self, entry):
        return "%s %s (systemd)" % (self.unit, entry.name)


class Manager(SystemdIni):
    """systemd's own settings: system.conf (the first found), then system.conf.d."""

    reader = "systemd"

    def files(self, host):
        folders = CONF_DIRS[:-1]  # systemd reads its own settings from no /lib (systemd-analyze cat-config)
        main = next((d + "systemd/system.conf" for d in folders if host.exists(d + "systemd/system.conf")), None)
        return ([main] if main else []) + conf_files(host, [d + "systemd/system.conf.d" for d in folders])

    def label(self, entry):
        return "systemd %s (system.conf)" % entry.name


_UNIT = re.compile(r"/etc/systemd/system/([^/]+\.(?:%s))(?:\.d/[^/]+\.conf)?" % "|".join(UNIT_TYPES))
LAYOUTS = ((re.compile(r"/etc/sysctl\.d/[^/]+\.conf"), Sysctl), (re.compile(r"/etc/modprobe\.d/[^/]+\.conf"), Modprobe),
           (re.compile(r"/etc/security/limits\.d/[^/]+\.conf"), Limits),
           (re.compile(r"/etc/ssh/sshd_config\.d/[^/]+\.conf"), Sshd),
           (re.compile(r"/etc/systemd/system\.conf\.d/[^/]+\.conf"), Manager))


def layout_for(path):
    """The layout a stage's file belongs to, from its path; None for a file no reader merges."""
    for pattern, layout in LAYOUTS:
        if pattern.fullmatch(path):
            return layout(path)
    unit = _UNIT.fullmatch(path)
    return Unit(path, unit.group(1)) if unit else None


class Overlay:
    """A host whose stage files read as they will once written (the merge the stage's run leads to)."""

    def __init__(self, host, files):
        self.host, self.files = host, dict(files)

    def path(self, path):
        return self.host.path(path)

    def read(self, path, default=None):
        return self.files[path] if path in self.files else self.host.read(path, default)

    def exists(self, path):
        return path in self.files or self.host.exists(path)

    def isfile(self, path):
        return path in self.files or os.path.isfile(self.host.path(path))

    def listdir(self, path):
        mine = {posixpath.basename(p) for p in self.files if posixpath.dirname(p) == path.rstrip("/")}
        return sorted(set(self.host.listdir(path)) | mine)


def overrides(host, layout, text):
    """[(ours, theirs)]: the entries of other files that change what the stage's file (``layout.path``, to hold
    ``text``) sets, each with the stage's entry it overrides. Only what changes the outcome: for a later-wins
    reader, the differing entries after the last one that gives the stage's value; for sshd, those before the
    first. A file that sets the same value, or comes where it cannot win, is none of them."""
    view = Overlay(host, {layout.path: text})
    ours = layout.own(text)
    wanted = {}
    for entry in ours:
        if layout.order == "last" or entry.key not in wanted:
            wanted[entry.key] = entry
    entries = layout.entries(view, ours)
    out = []
    for key, mine in wanted.items():
        mine_at = [i for i, e in enumerate(entries) if e.key == key and e.path == layout.path]
        if not mine_at:
            continue  # the reader does not read the stage's file (sshd_effective says so for sshd)
        # From the entry that takes effect towards the stage's own, up to the first that gives the stage's value.
        rivals = reversed(entries[mine_at[-1] + 1:]) if layout.order == "last" else entries[:mine_at[0]]
        found = []
        for entry in rivals:
            if entry.key == key:
                if layout.same(key, entry.value, mine.value):
                    break
                found.append(entry)
        if isinstance(layout, Limits):  # a "<user> -" line anywhere undoes every limit of that user
            found += [e for e in entries if e.key == key.split()[0] + " * *"]
        out += [(mine, entry) for entry in sorted(found, key=entries.index)]
    return out


def turned_off(layout, text, found, note):
    """``text`` with the lines of ``found`` (entries of that file) commented out, each after a line ``note``
    says why; the rest as it was."""
    by_line = collections.defaultdict(list)
    for entry in found:
        by_line[entry.line].append(entry)
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in by_line:
            out += ["# %s" % note(by_line[number])] + layout.off(line, by_line[number])
        else:
            out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") or not text else "")


def render(layout_name, name, value):
    """A line (or lines) of a foreign file that sets ``name`` to ``value`` in that layout's syntax: what the
    mutation test and the unit tests drop into a folder."""
    if layout_name == "sysctl":
        return "%s = %s\n" % (name, value)
    if layout_name == "modprobe":
        module, param = name.split()
        return "options %s %s=%s\n" % (module, param, value)
    if layout_name in ("limits", "sshd"):
        return "%s %s\n" % (name, value)
    section, key = name.split(" ", 1)
    return "%s\n%s=%s\n" % (section, key, value)


def layout_name(layout):
    return {Sysctl: "sysctl", Modprobe: "modprobe", Limits: "limits", Sshd: "sshd"}.get(type(layout), "systemd")


_TIME = {"us": 1, "usec": 1, "ms": 10 ** 3, "msec": 10 ** 3, "": 10 ** 6, "s": 10 ** 6, "sec": 10 ** 6,
         "second": 10 ** 6, "seconds": 10 ** 6, "m": 60 * 10 ** 6, "min": 60 * 10 ** 6, "minute": 60 * 10 ** 6,
         "minutes": 60 * 10 ** 6, "h": 3600 * 10 ** 6, "hr": 3600 * 10 ** 6, "hour": 3600 * 10 ** 6,
         "hours": 3600 * 10 ** 6, "d": 86400 * 10 ** 6, "day": 86400 * 10 ** 6, "days": 86400 * 10 ** 6,
         "w": 604800 * 10 ** 6, "week": 604800 * 10 ** 6, "weeks": 604800 * 10 ** 6}


def _timespan(value):
    """A systemd time span in microseconds (40s, 1min 30s, 40 are seconds), else the text itself."""
    text = str(value).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text)
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([a-z]*)", "", text).strip() or any(u not in _TIME for _, u in parts):
        return text
    return sum(float(n) * _TIME[u] for n, u in parts)


def _size(value):
    """A systemd size in bytes (128M is 128 MiB), else the text itself."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGTPE]?)", str(value).strip())
    if not found:
        return str(value).strip()
    return float(found.group(1)) * 1024 ** " KMGTPE".index(found.group(2) or " ")
