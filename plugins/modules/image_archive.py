# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_archive
short_description: Check a docker save tarball on the controller holds the image ID the recipe pins
version_added: 0.1.0
description:
  - Reads the C(manifest.json) of a C(docker save) tarball on the controller (legacy and OCI layouts; the
    config file's name is the image ID) and fails, naming image_adopt_tarball and image_adopt_id, unless it
    holds O(image_id).
  - C(docker load) sets every tag the tarball carries, so a tag other than O(tag) is refused here; loading
    it could move a tag on a node without the stage's check.
  - Runs on the controller only (an action plugin), before any node is touched, in check mode too; it never
    loads anything.
options:
  path:
    description: The tarball on the controller.
    type: path
    required: true
  image_id:
    description: The image ID it must hold (sha256:<64 hex>).
    type: str
    required: true
  tag:
    description: The one tag the tarball may carry (image_adopt_tag); a tarball saved by image ID carries none.
    type: str
    required: true
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The tarball holds the pinned image
  dgxspark.ds41f.image_archive:
    path: /srv/releases/spark-ds41f-1030.tar
    image_id: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    tag: spark-ds41f:spark-ds41f-1030
  run_once: true
"""

RETURN = r"""
images:
  description: Every image the tarball holds - {image ID, repo tags}.
  returned: always
  type: dict
size:
  description: The tarball's size in bytes.
  returned: success
  type: int
"""
