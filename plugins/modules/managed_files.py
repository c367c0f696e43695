# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: managed_files
short_description: Converge a set of small configuration files in one call
version_added: 0.1.0
description:
  - Reads every listed file (content, mode, owner, group) and writes only those that differ, creating missing
    parent folders; with O(state=absent) removes the files that exist.
  - One call per node for a stage's files instead of one task per file, with a diff and a drift entry per file
    (the first line that differs), so a run over many files stays fast and its report stays readable.
  - Each file's C(template) is rendered on the controller by the action plugin, from the role's C(templates/)
    with the task's variables plus the file's own C(vars); or the file gives its C(content) directly.
  - A file with C(validate) (a command with C(%s)) is checked in a temporary file beside it before it replaces
    the old one; a file that does not validate fails the task and is never put in place.
  - O(directories) are the folders the stage owns; each is created when missing and given its mode and owner,
    before any file; a folder that differs is a drift entry of its own, as a file is.
  - With O(overrides), a file in a folder that the system merges with others (C(/etc/sysctl.d),
    C(/etc/modprobe.d), C(/etc/security/limits.d), C(/etc/ssh/sshd_config.d), C(/etc/systemd/system.conf.d), a
    unit file or a drop-in under C(/etc/systemd/system)) is read as its reader reads it, the whole merge (every
    folder and file it reads, in its order); a line of another file that changes a setting the file sets is a
    drift entry about that file, and is turned off (commented out, under a line saying why; the rest of that
    file is kept, and a package's file under C(/usr) or C(/lib) is replaced by an edited copy of the same name
    in C(/etc)). The file's path is then in RV(changed_paths), so its follow-up work (a reload) runs.
    Each setting is declared as an object of kind C(setting).
options:
  files:
    description: The files; each has C(path), C(template) or C(content), and optionally C(mode) (default
      C(0644)), C(owner), C(group) (default C(root)), C(validate) and C(vars).
    type: list
    elements: dict
    required: true
  state:
    description: C(present) writes the files, C(absent) removes them.
    type: str
    choices: [present, absent]
    default: present
  directories:
    description: Folders to converge before the files (O(state=present) only); each has C(path) and optionally
      C(mode) (default C(0755)), C(owner) and C(group) (default C(root)). Folders are never removed.
    type: list
    elements: dict
    default: []
  directory_mode:
    description: The mode of parent folders it creates that O(directories) does not list.
    type: str
    default: "0755"
  overrides:
    description: Read the whole merge of each file's folder and turn off what overrides the file (see above).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads and compares only; nothing is written or validated.
  diff_mode:
    support: full
    description: One diff per file that differs.
  idempotent:
    support: full
    description: A second run finds every file as wanted.
  action:
    support: full
    description: The action plugin renders templates on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Node map and recipe, in their folder
  dgxspark.ds41f.managed_files:
    directories:
      - {path: /etc/ds41f}
    files:
      - {path: /etc/ds41f/site.json, content: "{{ node_map | to_nice_json }}"}
      - {path: /etc/ds41f/recipe.json, content: "{{ recipe | to_nice_json }}"}

- name: Recovery files
  dgxspark.ds41f.managed_files:
    files:
      - {path: /etc/ssh/sshd_config.d/01-ds41f-recovery.conf, template: sshd.conf.j2, validate: /usr/sbin/sshd -t -f %s}
      - {path: /usr/local/libexec/ds41f-management-health, template: management-health.sh.j2, mode: "0755"}
    overrides: true  # an earlier sshd_config.d file that sets LoginGraceTime is turned off
  register: written
"""

RETURN = r"""
changed_paths:
  description: The folders and files created, written, re-moded or removed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
actions:
  description: What was done (or would be, in check mode).
  returned: always
  type: list
  elements: str
drift:
  description: One entry per file that differs (setting, expected, found, fix, object), and with O(overrides) one
    per setting a foreign file overrides (its object that file).
  returned: always
  type: list
  elements: dict
"""

import grp
import os
import pwd
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import foreign_files
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host

FILE_KEYS = ("path", "content", "mode", "owner", "group", "validate")
DIRECTORY_KEYS = ("path", "mode", "owner", "group")


def read(path):
    """(content or None, mode string, owner, group) of a file as it is now."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
        stat = os.stat(path)
    except FileNotFoundError:
        return None, None, None, None
    owner, group = pwd.getpwuid(stat.st_uid).pw_name, grp.getgrgid(stat.st_gid).gr_name
    return content, "%04o" % (stat.st_mode & 0o7777), owner, group


def first_difference(want, have):
    """The first line that differs, as (expected, found): what the drift table shows."""
    if have is None:
        return "present", "absent"
    a, b = want.splitlines(), have.splitlines()
    for i in range(max(len(a), len(b))):
        x, y = (a[i] if i < len(a) else "(end)"), (b[i] if i < len(b) else "(end)")
        if x != y:
            return "line %d: %s" % (i + 1, x), "line %d: %s" % (i + 1, y)
    return "(same lines)", "(whitespace differs)"


def write(module, spec, directory_mode):
    path = spec["path"]
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=int(directory_mode, 8))
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".ds41f-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(spec["content"])
        if spec.get("validate"):
            rc, out, err = module.run_command(spec["validate"] % temp)
            if rc != 0:
                module.fail_json(msg="%s does not validate (%s): %s. Nothing was put in place." % (
                    path, spec["validate"] % path, (err or out).strip()))
        os.chmod(temp, int(spec["mode"], 8))
        os.chown(temp, pwd.getpwnam(spec["owner"]).pw_uid, grp.getgrnam(spec["group"]).gr_gid)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def set_attributes(spec):
    os.chmod(spec["path"], int(spec["mode"], 8))
    os.chown(spec["path"], pwd.getpwnam(spec["owner"]).pw_uid, grp.getgrnam(spec["group"]).gr_gid)


def owner_problem(spec, i, field="files"):
    for key, lookup in (("owner", pwd.getpwnam), ("group", grp.getgrnam)):
        try:
            lookup(str(spec[key]))
        except KeyError:
            return "%s[%d].%s: %s %r does not exist on this node. Fix: create it first, or name an existing one." % (
                field, i, key, "user" if key == "owner" else "group", spec[key])
    return None


def make_directory(spec):
    os.makedirs(spec["path"], exist_ok=True)
    set_attributes(spec)


def converge_directory(module, plan, raw, i):
    """Plan one folder: created when missing, re-moded or re-owned when it differs; True when it differs."""
    spec = {"mode": "0755", "owner": "root", "group": "root"}
    spec.update({k: v for k, v in raw.items() if v is not None and k in DIRECTORY_KEYS})
    checks.fail_on(module, checks.mode(spec["mode"], "directories[%d].mode" % i),
                   owner_problem(spec, i, "directories"))
    spec["mode"] = "%04o" % int(spec["mode"], 8)
    path = spec["path"]
    plan.manages("directory", path, mode=spec["mode"], owner=spec["owner"], group=spec["group"])
    want = "folder %s %s:%s" % (spec["mode"], spec["owner"], spec["group"])
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        plan.change(path, want, "absent", "create folder %s" % path, lambda: make_directory(spec),
                    about=("directory", path))
        return True
    if not os.path.isdir(path):
        module.fail_json(msg="directories[%d].path: %s is not a folder. Fix: move it away, or give another path." % (
            i, path))
    have = "folder %04o %s:%s" % (stat.st_mode & 0o7777, pwd.getpwuid(stat.st_uid).pw_name,
                                  grp.getgrgid(stat.st_gid).gr_name)
    if have != want:
        plan.change("%s attributes" % path, want, have, "chmod/chown %s" % path, lambda: set_attributes(spec),
                    about=("directory", path))
        return True
    return False


MODULE_SPEC = dict(argument_spec={
    "files": {"type": "list", "elements": "dict", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "directories": {"type": "list", "elements": "dict", "default": []},
    "directory_mode": {"type": "str", "default": "0755"},
    "overrides": {"type": "bool", "default": False},
}, supports_check_mode=True)


def run(module):
    checks.fail_on(module, checks.mode(module.params["directory_mode"], "directory_mode"),
                   checks.elements(module.params["files"], "files", {"path": str}),
                   checks.elements(module.params["directories"], "directories", {"path": str}))
    plan = Plan(module)
    changed = []
    if module.params["state"] == "present":
        for i, raw in enumerate(module.params["directories"]):
            if converge_directory(module, plan, raw, i):
                changed.append(raw["path"])
    for i, raw in enumerate(module.params["files"]):
        spec = {"mode": "0644", "owner": "root", "group": "root", "validate": None, "content": None}
        spec.update({k: v for k, v in raw.items() if v is not None and k in FILE_KEYS})
        if module.params["state"] == "present" and spec["content"] is None:
            module.fail_json(msg="files[%d]: %s has no content. Fix: give a template or a content." % (i, spec["path"]))
        checks.fail_on(module, checks.mode(spec["mode"], "files[%d].mode" % i), owner_problem(spec, i),
                       "files[%d].path: %s is a folder. Fix: give the path of a file in it." % (i, spec["path"])
                       if os.path.isdir(spec["path"]) else None)
        spec["mode"] = "%04o" % int(spec["mode"], 8)
        path = spec["path"]
        content, mode, owner, group = read(path)
        if module.params["state"] == "absent":
            plan.manages("file", path, state="absent")
            if content is not None:
                plan.change(path, None, "present", "remove %s" % path, lambda p=path: os.unlink(p),
                            about=("file", path))
                changed.append(path)
            continue
        plan.manages("file", path, mode=spec["mode"], owner=spec["owner"], group=spec["group"])
        if content != spec["content"]:
            expected, found = first_difference(spec["content"], content)
            plan.change(path, expected, found, "write %s" % path,
                        lambda s=spec: write(module, s, module.params["directory_mode"]), about=("file", path))
            plan.diffs[-1].update(before=content or "", after=spec["content"])
            changed.append(path)
        elif (mode, owner, group) != (spec["mode"], spec["owner"], spec["group"]):
            plan.change("%s attributes" % path, "%s %s:%s" % (spec["mode"], spec["owner"], spec["group"]),
                        "%s %s:%s" % (mode, owner, group), "chmod/chown %s" % path,
                        lambda s=spec: set_attributes(s), about=("file", path))
            changed.append(path)
        # After the file itself: what overrides it is turned off once it is in place.
        if module.params["overrides"] and foreign_files.audit(plan, Host("/"), path, spec["content"]) \
                and path not in changed:
            changed.append(path)
    module.exit_json(**plan.result(changed_paths=changed))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
