# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Where readers read from: a filesystem root and a command runner."""

from __future__ import annotations

import os


class Unavailable(Exception):
    """This reading cannot be taken on this node; ``str()`` says why (shown to the sysadmin)."""


class Host:
    def __init__(self, root="/", run=None):
        self.root = root
        self._run = run

    def path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path, default=None):
        try:
            with open(self.path(path)) as handle:
                return handle.read()
        except OSError:
            return default

    def exists(self, path):
        return os.path.exists(self.path(path))

    def listdir(self, path):
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def run(self, argv):
        """(rc, stdout, stderr) of a command; rc 127 when it is not installed."""
        if self._run is None:
            raise Unavailable("no command runner for %s" % argv[0])
        return self._run(argv)


def module_host(module):
    """A Host for a module running on a node."""

    def run(argv):
        if module.get_bin_path(argv[0]) is None and not os.path.isabs(argv[0]):
            return 127, "", "%s: not found" % argv[0]
        return module.run_command(argv)

    return Host("/", run)
