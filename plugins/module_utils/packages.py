# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A program a module needs, installed from the distribution (apt) when missing: one change of the module's plan."""

from __future__ import annotations

import os
import shutil

SBIN = ("/usr/sbin", "/sbin")


def present(program):
    return bool(shutil.which(program)) or any(os.path.exists(os.path.join(d, program)) for d in SBIN)


def ensure(module, plan, program, package):
    """Plan the install of ``package`` when ``program`` is missing (apt-get, outside check mode). Returns whether
    the program is there now (in check mode: whether it was)."""
    if present(program):
        return True
    plan.change("package %s" % package, "installed", "not installed", "apt-get install %s" % package,
                lambda: module.run_command(["apt-get", "install", "-y", "--no-install-recommends", package],
                                           check_rc=True, environ_update={"DEBIAN_FRONTEND": "noninteractive"}),
                about=("package", package))
    return not module.check_mode
