# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Render each file's template on the controller, then converge them all with one module call on the node."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.modules import managed_files as module_doc

FILE_KEYS = ("path", "template", "content", "mode", "owner", "group", "validate", "vars", "notify")
DIRECTORY_KEYS = ("path", "mode", "owner", "group")
# The header a template's {{ ansible_managed }} gets unless the play sets that variable: ansible.builtin.template's
# own default. Its ansible.cfg setting (DEFAULT_MANAGED_STR) is deprecated and goes in ansible-core 2.23, which
# leaves ansible_managed an ordinary variable.
ANSIBLE_MANAGED = "Ansible managed"


def file_problems(files, absent, field="files", keys=FILE_KEYS, what="file"):
    """The first problem with the files (or directories) argument (element keys, modes), on the controller, or
    None."""
    problem = checks.elements(files if files is not None else "missing", field, {"path": str})
    if problem:
        return problem
    for i, item in enumerate(files):
        where = "%s[%d]" % (field, i)
        unknown = sorted(set(item) - set(keys))
        if unknown:
            return "%s.%s: is not a %s setting. Fix: use %s." % (where, unknown[0], what, ", ".join(keys))
        if not item["path"].startswith("/") or item["path"].endswith("/"):
            return "%s.path: %r is not an absolute file path. Fix: give the file's full path." % (where, item["path"])
        if "mode" in item:
            problem = checks.mode(item["mode"], where + ".mode")
            if problem:
                return problem
        for key in ("owner", "group"):
            if key in item and (not isinstance(item[key], str) or not item[key]):
                return "%s.%s: %r is not a user or group name. Fix: write it as a string, e.g. root." % (
                    where, key, item[key])
        if field == "files" and not absent and item.get("template") is None and item.get("content") is None:
            return "%s: %s has neither template nor content. Fix: give one of them." % (where, item["path"])
    return None


def rendered_args(action, args, task_vars):
    """The module's arguments with every file's template rendered (node_steps renders its steps' files here too).
    ``action``: the calling action plugin, whose task and role find the templates."""
    args = dict(args)
    files = []
    absent = args.get("state") == "absent"
    problem = file_problems(args.get("files"), absent) or file_problems(
        args.get("directories") or [], absent, "directories", DIRECTORY_KEYS, "folder")
    if problem:
        raise AnsibleActionFail(problem)
    for item in args.get("files") or []:
        item = dict(item)
        name = item.pop("template", None)
        extra = item.pop("vars", None) or {}
        item.pop("notify", None)  # the role's follow-up, not the node's business
        if absent:
            item.pop("content", None)
        elif name is not None:
            try:
                source = action._find_needle("templates", name)
            except AnsibleError as exc:
                raise AnsibleActionFail("%s: %s" % (item.get("path"), exc)) from exc
            data = trust_as_template(action._loader.get_text_file_contents(source))
            searchpath = [os.path.dirname(source)] + list(task_vars.get("ansible_search_path", []))
            # What ansible.builtin.template offers a template, so the same templates render here.
            variables = dict(task_vars, template_path=source, template_destpath=item.get("path"), **extra)
            variables.setdefault("ansible_managed", ANSIBLE_MANAGED)
            templar = action._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
            item["content"] = templar.template(data, escape_backslashes=False) or ""
        elif "content" not in item:
            raise AnsibleActionFail("%s: give a template or a content." % item.get("path"))
        files.append(item)
    args["files"] = files
    return args


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION, yaml.safe_load))
        args = rendered_args(self, self._task.args, task_vars)
        result.update(self._execute_module("dgxspark.ds41f.managed_files", module_args=args, task_vars=task_vars))
        return result
