# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Render each file's template on the controller, then converge them all with one module call on the node."""

from __future__ import annotations

import os

from ansible import constants as C
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        files = []
        absent = args.get("state") == "absent"
        for item in args.get("files") or []:
            item = dict(item)
            name = item.pop("template", None)
            extra = item.pop("vars", None) or {}
            item.pop("notify", None)  # the role's follow-up, not the node's business
            if absent:
                item.pop("content", None)
            elif name is not None:
                try:
                    source = self._find_needle("templates", name)
                except AnsibleError as exc:
                    raise AnsibleActionFail("%s: %s" % (item.get("path"), exc)) from exc
                data = trust_as_template(self._loader.get_text_file_contents(source))
                searchpath = [os.path.dirname(source)] + list(task_vars.get("ansible_search_path", []))
                # What ansible.builtin.template offers a template, so the same templates render here.
                variables = dict(task_vars, template_path=source, template_destpath=item.get("path"), **extra)
                variables.setdefault("ansible_managed", C.DEFAULT_MANAGED_STR)
                templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
                item["content"] = templar.template(data, escape_backslashes=False) or ""
            elif "content" not in item:
                raise AnsibleActionFail("%s: give a template or a content." % item.get("path"))
            files.append(item)
        args["files"] = files
        result.update(self._execute_module("dgxspark.ds41f.managed_files", module_args=args, task_vars=task_vars))
        return result
