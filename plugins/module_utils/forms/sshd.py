# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The sshd keywords the recovery drop-in may carry, each with the form of its value.

The drop-in (``/etc/ssh/sshd_config.d/01-ds41f-recovery.conf``) is read first and sshd keeps the first value it
reads, so a keyword here overrides the node's own ``sshd_config``. Only keywords the baseline knows pass: its
limits, each value written as ``sshd -T`` prints it (the stage compares with that), never a value sshd reads as
no limit; and authentication keywords only at their strong value. A site that sets another keyword, or a weaker
value, on purpose lists the keyword in ``host_baseline_sshd_accepted_keywords``; ``Match`` and ``Include`` never
pass (they would make every later line conditional, or read another file).
"""

from __future__ import annotations

import re

OVERRIDE = "host_baseline_sshd_accepted_keywords"
_KEYWORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
LOG_LEVELS = ("QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3")
NEVER = {"match": "starts a conditional block: every line after it applies only to the connections it matches",
         "include": "reads another file into the drop-in, which the baseline neither writes nor checks"}


def _whole(value, zero):
    """(reason, fix) unless ``value`` is a whole number above 0 (``zero`` says what 0 means to sshd)."""
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.isdigit()):
        return ("is not a whole number, which sshd -T prints and the stage compares with.",
                "write a whole number without a unit, e.g. 30 (seconds for a time).")
    if int(value) == 0:
        return ("is 0, which sshd reads as %s." % zero, "write a number above 0.")
    return None


def _startups(value):
    match = re.fullmatch(r"([0-9]+):([0-9]+):([0-9]+)", value) if isinstance(value, str) else None
    if not match:
        return ("is not start:rate:full (three whole numbers, as sshd -T prints MaxStartups).",
                "write it as start:rate:full, e.g. \"64:30:128\" (quoted: YAML reads 64:30 as a number).")
    start, rate, full = (int(g) for g in match.groups())
    if not (1 <= start <= full and 1 <= rate <= 100):
        return ("is not 1 <= start <= full with a rate from 1 to 100: sshd refuses it, or never drops a flood.",
                "write e.g. \"64:30:128\".")
    return None


def _netblock(value):
    match = re.fullmatch(r"([0-9]+):([0-9]+)", value) if isinstance(value, str) else None
    if not match or not (1 <= int(match.group(1)) <= 32 and 1 <= int(match.group(2)) <= 128):
        return ("is not ipv4:ipv6 prefix lengths (1-32 and 1-128), as sshd -T prints PerSourceNetBlockSize.",
                "write e.g. \"32:128\".")
    return None


def _choice(values):
    def check(value):
        if isinstance(value, bool):
            return ("is a YAML boolean, which the drop-in would carry as %s: sshd refuses it." % value,
                    "write the word in quotes: %s." % " or ".join('"%s"' % v for v in values))
        if value not in values:
            return ("is not %s." % " or ".join(values), "write %s." % " or ".join(values))
        return None
    return check


# {lower-case keyword: (its spelling, value check)}: the limits the baseline knows.
LIMITS = {
    "logingracetime": ("LoginGraceTime", lambda v: _whole(v, "no limit: a connection that never logs in keeps its "
                                                          "unauthenticated slot for ever")),
    "maxstartups": ("MaxStartups", _startups),
    "persourcemaxstartups": ("PerSourceMaxStartups", lambda v: (
        ("is none, which sshd reads as no limit per source.", "write a number above 0, e.g. 32.")
        if v == "none" else _whole(v, "no limit per source"))),
    "persourcenetblocksize": ("PerSourceNetBlockSize", _netblock),
    "maxauthtries": ("MaxAuthTries", lambda v: _whole(v, "no attempt at all: nobody could log in"
                                                       " (the admin is locked out)")),
    "maxsessions": ("MaxSessions", lambda v: _whole(v, "no sessions: nobody gets a shell (the admin is locked out)")),
    "clientaliveinterval": ("ClientAliveInterval", lambda v: _whole(v, "off: a dead client's session is never "
                                                                    "detected, so it holds its slot with no limit")),
    "clientalivecountmax": ("ClientAliveCountMax", lambda v: _whole(v, "off: unanswered keepalives never end the "
                                                                    "session (no limit)")),
    "tcpkeepalive": ("TCPKeepAlive", _choice(("yes", "no"))),
    "usedns": ("UseDNS", _choice(("yes", "no"))),
    "loglevel": ("LogLevel", _choice(LOG_LEVELS)),
}
# {lower-case keyword: (its spelling, strong values, what another value does)}.
AUTHENTICATION = {
    "passwordauthentication": ("PasswordAuthentication", ("no",), "lets passwords in, which keys alone keep out"),
    "kbdinteractiveauthentication": ("KbdInteractiveAuthentication", ("no",), "lets passwords in by another door"),
    "permitemptypasswords": ("PermitEmptyPasswords", ("no",), "lets an account without a password in"),
    "hostbasedauthentication": ("HostbasedAuthentication", ("no",), "trusts other hosts to vouch for a user"),
    "ignorerhosts": ("IgnoreRhosts", ("yes",), "trusts users' .rhosts files"),
    "strictmodes": ("StrictModes", ("yes",), "accepts key files that others can write"),
    "permituserenvironment": ("PermitUserEnvironment", ("no",), "lets a login set LD_PRELOAD and the like"),
    "x11forwarding": ("X11Forwarding", ("no",), "opens X11 forwarding on a headless node"),
    "pubkeyauthentication": ("PubkeyAuthentication", ("yes",), "turns off keys, which are how Ansible and the "
                             "admin log in: everyone is locked out"),
    "permitrootlogin": ("PermitRootLogin", ("prohibit-password", "without-password"),
                        "either lets root in by password (yes) or keeps root out (no, forced-commands-only), and the "
                        "serving watchdog restarts workers as root over ssh"),
}


def keyword_problem(value):
    """(reason, fix) when a keyword of the override list is not one the override can accept, else None."""
    if not _KEYWORD.fullmatch(value):
        return ("is not an sshd keyword (letters and digits).", "write it as sshd_config spells it.")
    if value.lower() in NEVER:
        return ("%s; no override lets the recovery drop-in carry it." % NEVER[value.lower()],
                "remove it from %s; put it in a drop-in of your own." % OVERRIDE)
    return None


def problems(settings, accepted=()):
    """[(keyword, value, reason, fix)] for the drop-in's settings; ``accepted``: the site's override list."""
    accepted = {str(k).lower() for k in accepted or ()}
    out = []
    for key, value in settings.items():
        lower = key.lower() if isinstance(key, str) else None
        if lower is None or not _KEYWORD.fullmatch(key):
            out.append((key, None, "is not an sshd keyword (letters and digits).", "write the keyword as "
                        "sshd_config spells it, e.g. LoginGraceTime."))
        elif lower in NEVER:
            out.append((key, None, "%s; the recovery drop-in never carries it." % NEVER[lower],
                        "remove it; put conditional settings in a drop-in of your own, after 01-."))
        elif lower in LIMITS or lower in AUTHENTICATION:
            spelling = (LIMITS.get(lower) or AUTHENTICATION[lower])[0]
            bad = LIMITS[lower][1](value) if lower in LIMITS else None
            if lower in AUTHENTICATION:
                strong, what = AUTHENTICATION[lower][1:]
                bad = _choice(strong)(value) if isinstance(value, bool) else None
                if not bad and value not in strong and lower not in accepted:
                    bad = ("%s: with the drop-in read first, it overrides the node's own sshd_config." % what,
                           "write %s %s, or remove it; to weaken it on purpose, list %s in %s." % (
                               spelling, " or ".join(strong), spelling, OVERRIDE))
            if bad:
                out.append((key, value, bad[0], bad[1]))
        elif lower not in accepted:
            out.append((key, None, "is not a keyword the baseline knows: read first, it would override the node's "
                        "own sshd_config with nothing checking what it does to logins.",
                        "use one of %s; to set %s on purpose, list it in %s." % (
                            ", ".join(v[0] for v in LIMITS.values()), key, OVERRIDE)))
        elif isinstance(value, (bool, dict, list)) or value is None or not str(value).strip() or "#" in str(value):
            out.append((key, value, "is not one value on the keyword's line (a boolean, list, empty value or #).",
                        "write the value as sshd_config takes it, quoted in YAML (\"no\", not no)."))
    return out
