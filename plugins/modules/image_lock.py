# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: image_lock
short_description: Read and check an image lock on the controller
version_added: 0.1.0
description:
  - Reads C(images/<release>/lock.yml) (format in C(plugins/module_utils/lockfile.py)) and checks that it
    pins every build input - the base by digest, every source by full commit and expected tree, a patch
    series numbered without gaps that matches the lock's count, a Dockerfile, a smoke command - and fails
    naming each field that does not, with the fix.
  - Returns the build plan, the input hash (sha256 over every input, patches and Dockerfile bytes
    included) and the labels the image carries. Runs on the controller only (an action plugin).
options:
  file:
    description: The lock file; a relative path is read from the collection root.
    type: str
    required: true
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the lock
  dgxspark.ds41f.image_lock:
    file: images/spark-ds41f-1030/lock.yml
  run_once: true
  register: lock
"""

RETURN = r"""
image:
  description: The name:tag the build produces.
  returned: success
  type: str
input_hash:
  description: sha256 over every build input; the image's ds41f.input-hash label.
  returned: success
  type: str
labels:
  description: The labels the image carries (input hash, release, base, each source's commit and tree).
  returned: success
  type: dict
sources:
  description: Each source - name, url, commit, tree, patches (paths relative to the lock's folder).
  returned: success
  type: list
  elements: dict
files:
  description: Every input file relative to the lock's folder (Dockerfile first, then the patches in order).
  returned: success
  type: list
  elements: str
folder:
  description: The lock's folder on the controller.
  returned: success
  type: str
problems:
  description: What the lock fails to pin, one line per field with its fix.
  returned: failure
  type: list
  elements: str
"""
