# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Which DGX OS release a node runs.

Two sources say it, in two numberings. /etc/dgx-release names the product (DGX_NAME), the factory image
(DGX_SWBUILD_VERSION, e.g. 7.2.3) and, after each OTA update, a DGX_OTA_VERSION line (7.5.0, 7.6.0, ...; the last
one is the update applied last). The release the recipe's floor names (26.09.2: year, month, revision) is the
version of the package `dgx-spark-ota-update-meta`, which each OTA updates and which pulls in that release's
packages (`nvidia-spark-grub-kho` since 26.09.2)."""

from __future__ import annotations

import shlex

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dpkg

RELEASE_FILE = "/etc/dgx-release"
META_PACKAGE = "dgx-spark-ota-update-meta"


def parse_release(text):
    """{name, build, ota}: DGX_NAME, DGX_SWBUILD_VERSION and the last DGX_OTA_VERSION of /etc/dgx-release (shell
    assignments, quoted or not). The serial number it also holds is never read."""
    found = {"name": None, "build": None, "ota": None}
    keys = {"DGX_NAME": "name", "DGX_SWBUILD_VERSION": "build", "DGX_OTA_VERSION": "ota"}
    for line in (text or "").splitlines():
        key, sep, raw = line.strip().partition("=")
        if not sep or key not in keys:
            continue
        try:
            words = shlex.split(raw)
        except ValueError:
            words = [raw]
        found[keys[key]] = " ".join(words) or None
    return found


def read(host):
    """{release: parse_release of /etc/dgx-release or None without one, meta: the meta package's version or None}."""
    text = host.read(RELEASE_FILE)
    return {"release": parse_release(text) if text is not None else None,
            "meta": dpkg.installed_version(host, META_PACKAGE)}


def describe(found):
    """What the node says it runs, in a few words."""
    release = found["release"]
    if release is None:
        said = "no %s" % RELEASE_FILE
    else:
        said = "%s %s" % (release["name"] or "DGX OS", release["ota"] or release["build"] or "(no version)")
    meta = "%s %s" % (META_PACKAGE, found["meta"]) if found["meta"] else "no %s" % META_PACKAGE
    return "%s; %s" % (meta, said)


def meets(found, floor):
    """Whether the node's release is ``floor`` or later: only the meta package's version is in the floor's
    numbering, so a node without it does not meet any floor."""
    return bool(found["meta"]) and dpkg.at_least(found["meta"], floor)
