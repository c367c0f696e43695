# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Read and check an image lock on the controller, before any node is touched."""

from __future__ import annotations

import os

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import lockfile
from ansible_collections.dgxspark.ds41f.plugins.modules import image_lock as module_doc

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        given = self._task.args.get("file")
        path = given if os.path.isabs(given or "") else os.path.join(ROOT, given or "")
        if not given or not os.path.isfile(path):
            result.update(failed=True, msg="image_lock_file: %s is not a file. Fix: point it at "
                                           "images/<release>/lock.yml (relative to the collection root)." % given)
            return result
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle)
            plan = lockfile.load(data, os.path.dirname(path), source=os.path.relpath(path, ROOT))
        except yaml.YAMLError as exc:
            result.update(failed=True, msg="%s is not YAML: %s" % (given, exc))
            return result
        except lockfile.LockError as exc:
            result.update(failed=True, msg=str(exc), problems=exc.problems)
            return result
        result.update(changed=False, folder=os.path.dirname(path), **plan)
        return result
