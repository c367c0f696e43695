# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Where the release image comes from: built from a lock, or adopted (a tarball from the controller, or a
registry pull by digest), and the ID of each image in a ``docker save`` tarball.

``problems(values)`` is the cross-field rule the validation play runs (recipe.cross_checks): the settings of
one way are required, and those of the other way must be empty, so a recipe never says two things at once.
"""

from __future__ import annotations

import json
import re
import tarfile

from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}\Z")
ADOPT_WAYS = {"image_adopt_tarball": "a docker save tarball on the controller",
              "image_adopt_registry": "a registry repository, pulled by image_adopt_digest"}
ADOPT_ONLY = ("image_adopt_tarball", "image_adopt_registry", "image_adopt_digest", "image_adopt_id")


def _set(values, name):
    value = values.get(name)
    return value not in (None, "")


def problems(values):
    """[Problem] for image_source and the image_adopt_* settings that contradict each other."""
    way = values.get("image_source")
    if way not in ("build", "adopt"):
        return []  # the argument spec names a wrong or missing value
    out = []
    if way == "build":
        for name in ADOPT_ONLY:
            if _set(values, name):
                out.append(Problem(name, "is set, but image_source is build (the lock's image is built, nothing "
                                         "is adopted).", "set image_source: adopt, or empty %s." % name))
        return out
    given = [n for n in ADOPT_WAYS if _set(values, n)]
    if len(given) != 1:
        out.append(Problem("image_source", "is adopt, and %s." % (
            "both image_adopt_tarball and image_adopt_registry are set" if given else
            "neither image_adopt_tarball nor image_adopt_registry is set"),
            "set exactly one: image_adopt_tarball (%s) or image_adopt_registry (%s)." % (
                ADOPT_WAYS["image_adopt_tarball"], ADOPT_WAYS["image_adopt_registry"])))
    if not _set(values, "image_adopt_id"):
        out.append(Problem("image_adopt_id", "is empty, and image_source is adopt: nothing to verify the adopted "
                                             "image against.",
                           "write the release's image ID (sha256:<64 hex>, `docker image inspect --format "
                           "'{{.Id}}' IMAGE` where it was built)."))
    registry = "image_adopt_registry" in given
    if registry and not _set(values, "image_adopt_digest"):
        out.append(Problem("image_adopt_digest", "is empty, and image_adopt_registry is set: a pull must be pinned "
                                                 "by digest, never by tag.",
                           "write the manifest digest (sha256:<64 hex>, the RepoDigests entry of the pushed "
                           "image)."))
    if not registry and _set(values, "image_adopt_digest"):
        out.append(Problem("image_adopt_digest", "is set, but no image_adopt_registry is: a tarball is verified by "
                                                 "image_adopt_id.", "empty image_adopt_digest, or set "
                                                                    "image_adopt_registry instead of the tarball."))
    if not _set(values, "image_adopt_tag"):
        out.append(Problem("image_adopt_tag", "is empty, and image_source is adopt.",
                           "name the tag every node gets (the one serve_image names)."))
    return out


def archive_images(path):
    """{image ID: [repo tags]} of a ``docker save`` tarball, read from its manifest.json (legacy and OCI
    layouts: the config file's name is the image ID). Raises ValueError when the file is not such a tarball."""
    try:
        with tarfile.open(path) as tar:
            member = tar.getmember("manifest.json")
            manifest = json.load(tar.extractfile(member))
    except (tarfile.TarError, KeyError, OSError, ValueError) as exc:
        raise ValueError("%s is not a docker save tarball (%s)" % (path, exc)) from exc
    found = {}
    for entry in manifest if isinstance(manifest, list) else ():
        config = str(entry.get("Config") or "")
        digest = config.rsplit("/", 1)[-1].split(".", 1)[0]  # <hex>.json (legacy) or blobs/sha256/<hex> (OCI)
        if re.match(r"^[0-9a-f]{64}\Z", digest):
            found["sha256:" + digest] = list(entry.get("RepoTags") or [])
    if not found:
        raise ValueError("%s: its manifest.json names no image config" % path)
    return found
