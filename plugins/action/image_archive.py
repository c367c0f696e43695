# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Check an adopted image's tarball on the controller, before any node is touched."""

from __future__ import annotations

import os

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import image_source
from ansible_collections.dgxspark.ds41f.plugins.modules import image_archive as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION,
                                                                            yaml.safe_load))
        path, want = args["path"], args["image_id"]
        if not os.path.isfile(path):
            result.update(failed=True, images={}, msg="image_adopt_tarball: %s is not a file on the controller. "
                                                      "Fix: copy the release's docker save tarball there, or "
                                                      "correct the path." % path)
            return result
        try:
            images = image_source.archive_images(path)
        except ValueError as exc:
            result.update(failed=True, images={}, msg="image_adopt_tarball: %s. Fix: write it with "
                                                      "`docker save -o FILE IMAGE`." % exc)
            return result
        result.update(changed=False, images=images, size=os.path.getsize(path))
        if want not in images:
            result.update(failed=True, msg="image_adopt_id: %s holds %s, not %s. Fix: use the release's tarball, "
                                           "or correct image_adopt_id after checking where the tarball came from."
                                           % (path, ", ".join(sorted(images)), want))
            return result
        others = sorted({t for tags in images.values() for t in tags} - {args["tag"]})
        if others:
            result.update(failed=True, msg="image_adopt_tarball: %s carries the tag%s %s; docker load would set "
                                           "%s on every node without the stage's check. Fix: save it by image ID "
                                           "(`docker save -o FILE %s`) or under %s only." % (
                                               path, "" if len(others) == 1 else "s", ", ".join(others),
                                               "it" if len(others) == 1 else "them", want, args["tag"]))
        return result
