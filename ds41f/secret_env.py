"""Secrets in the operator's environment stay out of everything `ds41f` starts.

ansible-runner writes the whole environment of a run to its ``artifacts/command``, and ansible-playbook hands its
environment to every process it starts on the controller. So `ds41f` takes each variable whose name says it holds
a secret (``*_KEY``, ``*_TOKEN``, ``*PASSWORD*``, ``*SECRET*``, ``*VAULT*``, ...) out of its own environment before
it starts anything, and keeps the values here for the code that needs one (the bench's ``DS41F_API_KEY``).
Ansible's own settings among them hold a path, not a secret (a vault password file): they reach
ansible-playbook as its flags instead (``ansible_flags``).
"""

from __future__ import annotations

import fnmatch
import os

PATTERNS = ("*_KEY", "*_TOKEN", "*PASSWORD*", "*PASSWD*", "*SECRET*", "*CREDENTIAL*", "*VAULT*")
# Ansible settings whose value is a file (vault-id@file for identities), not the secret in it.
FLAGS = {
    "ANSIBLE_VAULT_PASSWORD_FILE": "--vault-password-file",
    "ANSIBLE_VAULT_IDENTITY_LIST": "--vault-id",
    "ANSIBLE_BECOME_PASSWORD_FILE": "--become-password-file",
    "ANSIBLE_CONNECTION_PASSWORD_FILE": "--connection-password-file",
}
_held = {}


def is_secret(name):
    upper = str(name).upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in PATTERNS)


def hold(environ=None):
    """Take every secret-named variable out of ``environ`` (this process's environment by default), keeping its
    value here; returns the names held so far. Calling it again is harmless."""
    environ = os.environ if environ is None else environ
    for name in [n for n in environ if is_secret(n)]:
        _held[name] = environ.pop(name)
    return sorted(_held)


def held(name):
    """The value a held variable had, or None."""
    return _held.get(name)


def ansible_flags():
    """ansible-playbook's flags for the held Ansible settings that name a file (FLAGS)."""
    hold()
    argv = []
    for name, flag in FLAGS.items():
        value = _held.get(name) or ""
        items = value.split(",") if name == "ANSIBLE_VAULT_IDENTITY_LIST" else [value]
        for item in filter(None, (i.strip() for i in items)):
            argv += [flag, item]
    return argv
