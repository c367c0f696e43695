# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: api_key_file
short_description: The head's API key file, made once
version_added: 0.2.0
description:
  - Keeps the API key in O(path) as C(VLLM_API_KEY=<key>) (mode 0600, in a folder of mode 0700, both owned by
    root). It never returns the key, so its result (drift rows for the doctor) can be shown and logged; the
    modules that call the API read the key from the file on the node.
  - With O(recipe_key), the file holds that key. Without it, a key generated once (48 hex digits) is kept for
    good.
  - A file that lost its generated key (deleted, or edited by hand) gets back the key the running engine
    (O(container)) was started with, so the group keeps answering; only without such an engine is a new key
    generated. Deleting the file therefore does not rotate a key - O(rotate) does.
  - With O(rotate), a new key is generated (or the recipe's is written), whatever the file or the engine hold; the
    serve stage then starts every rank anew, so the head serves with it (C(serve_rotate_key)).
  - A running engine started with another key than the file's (a recipe key changed, a rotation whose start
    failed) is a drift entry, with the rotation as its fix.
options:
  path:
    description: The key file.
    type: path
    required: true
  recipe_key:
    description: The key the recipe sets; empty keeps (or makes once) a generated key.
    type: str
    default: ""
  container:
    description: The engine container on this node whose C(VLLM_API_KEY) restores a generated key the file lost.
    type: str
    default: ""
  rotate:
    description: Write a new key - the recipe's, else a newly generated one - even where the file or the running
      engine holds one.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads the file and reports what differs; writes nothing.
  diff_mode:
    support: none
    description: The key is never shown.
  idempotent:
    support: partial
    description: A file that holds the key, with its modes, is left alone; O(rotate) writes a new key every time
      it is given.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The API key on the head
  dgxspark.ds41f.api_key_file:
    path: /etc/ds41f/serve/api-key.env
"""

RETURN = r"""
drift:
  description: What differs (setting, expected, found, fix), for the doctor's table; it never holds the key, only
    whether the file holds the one wanted.
  returned: always
  type: list
  elements: dict
managed:
  description: The key's folder and file, with the mode and owner kept (the doctor lists them).
  returned: always
  type: list
  elements: dict
"""

import json
import os
import secrets
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

PREFIX = "VLLM_API_KEY="


def held(path):
    """The key the file holds, or None."""
    try:
        with open(path) as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    if not text.startswith(PREFIX):
        return None
    return text[len(PREFIX):].strip() or None


def mode_of(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def describe(found):
    if found is None:
        return "absent"
    mode, uid, gid = found
    return "%04o uid %d gid %d" % (mode, uid, gid)


def root_only(plan, target, mode):
    """One change when ``target`` is not root's with ``mode`` (read once)."""
    found = mode_of(target)
    if found != (mode, 0, 0):
        plan.change("%s attributes" % target, "%04o uid 0 gid 0" % mode, describe(found),
                    "chmod %04o %s; chown root:root %s" % (mode, target, target))


def running_key(module, container):
    """The VLLM_API_KEY the container was started with (docker inspect), or None: no container, no docker."""
    if not container or module.get_bin_path("docker") is None:
        return None
    rc, out, _ = module.run_command(["docker", "inspect", "--format", "{{json .Config.Env}}", container])
    try:
        env = json.loads(out) if rc == 0 else []
    except ValueError:
        return None
    return next((item[len(PREFIX):] or None for item in env or [] if item.startswith(PREFIX)), None)


MODULE_SPEC = dict(argument_spec={"path": {"type": "path", "required": True},
                                  "recipe_key": {"type": "str", "default": "", "no_log": True},
                                  "container": {"type": "str", "default": ""},
                                  "rotate": {"type": "bool", "default": False}},
                   supports_check_mode=True)


def run(module):
    path, wanted, rotate = module.params["path"], module.params["recipe_key"], module.params["rotate"]
    folder = os.path.dirname(path)
    current = held(path)
    running = running_key(module, module.params["container"])
    key = None if rotate and not wanted else wanted or current or running
    # What differs, for the doctor's table: never the key itself, only whether it is the one wanted.
    plan = Plan(module)
    plan.manages("directory", folder, mode="0700", owner="root", group="root")
    plan.manages("file", path, mode="0600", owner="root", group="root")
    root_only(plan, folder, 0o700)
    if rotate:
        plan.change(path, "a new key (serve_rotate_key)" if not wanted else "the recipe's key (serve_rotate_key)",
                    "the key in use" if current else "no key", "write %s (root, 0600) with %s" % (
                        path, "a newly generated key" if not wanted else "the recipe's key"), about=("file", path))
    elif key is None or current != key:
        plan.change(path, "the recipe's key" if wanted else "a key", "another key" if current else "no key",
                    "write %s (root, 0600)%s" % (path, " with the key the running engine %s was started with"
                                                  % module.params["container"] if running and not current else ""),
                    about=("file", path))
    else:
        root_only(plan, path, 0o600)
    if running and key and running != key and not rotate:
        # The running head answers to another key than the file's: readiness, status and the smoke request fail.
        plan.drift.append({"setting": "%s API key" % module.params["container"], "expected": "the key in %s" % path,
                           "found": "another key (it started before the key changed)",
                           "fix": "ds41f run serve -e '{\"serve_rotate_key\": true}' (a new key, every rank started "
                                  "anew)", "object": {"kind": "container", "name": module.params["container"]}})
    if module.check_mode or not plan.actions:
        module.exit_json(**plan.result())
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o700)
    key = key or new_key(current, running)
    if current != key:
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(PREFIX + key + "\n")
        os.replace(tmp, path)
    os.chown(path, 0, 0)
    os.chmod(path, 0o600)
    module.exit_json(**plan.result())


def new_key(*old):
    """192 random bits as 48 hex digits, never one of the old keys."""
    while True:
        key = secrets.token_hex(24)
        if key not in old:
            return key


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
