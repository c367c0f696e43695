# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: watchdog_access
short_description: The one narrow entry in a worker's authorized_keys that lets the head's watchdog restart its rank
version_added: 0.3.0
description:
  - Keeps one line in O(authorized_keys) for the head watchdog's public key (M(dgxspark.ds41f.watchdog_key)),
    restricted - C(restrict) (no pty, no port, agent or X11 forwarding, no user rc), C(from=) the head's
    addresses, C(command=) the one restart - so the head's key can restart this rank's engine container and do
    nothing else.
  - The line is the one whose comment is O(marker); other lines are never touched. A marked line that differs is
    replaced; a second marked line is removed. With O(state=absent) the marked line is removed.
  - The folder of O(authorized_keys) is created (0700) and a new file is 0600; an existing file keeps its mode and
    owner.
options:
  public_key:
    description: The watchdog's public key (C(type key [comment])); empty while the head has none yet (check
      mode before its first run), when the row names the head's key as its cause.
    type: str
    default: ""
  sources:
    description: The addresses the head connects from (C(from=)).
    type: list
    elements: str
    default: []
  command:
    description: The one command the key may run (C(command=)).
    type: str
    default: ""
  state:
    description: C(present) keeps the line, C(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  authorized_keys:
    description: The file.
    type: path
    default: /root/.ssh/authorized_keys
  marker:
    description: The comment that marks the line as this module's.
    type: str
    default: ds41f-watchdog
  key_origin:
    description: Where the public key comes from - C(node) and C(path) of the head's private key - the cause a
      row names while the head has no key.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Reads and compares; writes nothing.
  diff_mode:
    support: full
    description: The marked line before and after.
  idempotent:
    support: full
    description: The line as wanted is left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The head's watchdog may restart this rank, and nothing else
  dgxspark.ds41f.watchdog_access:
    public_key: "{{ hostvars[spark_head].serve__watchdog_key.public_key }}"
    sources: ["{{ spark_head_address }}"]
    command: docker restart spark-ds41f
"""

RETURN = r"""
line:
  description: The line kept (empty for O(state=absent)).
  returned: always
  type: str
drift:
  description: What differs, the row about the entry.
  returned: always
  type: list
  elements: dict
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

MODULE_SPEC = dict(argument_spec={"public_key": {"type": "str", "default": ""},
                                  "sources": {"type": "list", "elements": "str", "default": []},
                                  "command": {"type": "str", "default": ""},
                                  "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
                                  "authorized_keys": {"type": "path", "default": "/root/.ssh/authorized_keys"},
                                  "marker": {"type": "str", "default": "ds41f-watchdog"},
                                  "key_origin": {"type": "dict", "default": {}, "no_log": False}},
                   supports_check_mode=True)


def entry(public_key, sources, command, marker):
    """The authorized_keys line: options, then the key's type and base64, then the marker as its comment."""
    key_type, key = public_key.split()[:2]
    options = ["restrict", 'from="%s"' % ",".join(sources), 'command="%s"' % command.replace('"', '\\"')]
    return "%s %s %s %s" % (",".join(options), key_type, key, marker)


def marked(line, marker):
    words = line.split()
    return bool(words) and words[-1] == marker and not line.lstrip().startswith("#")


def write(path, lines):
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700)
        os.chmod(folder, 0o700)
    try:
        st = os.stat(path)
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    except FileNotFoundError:
        mode, owner = 0o600, None
    tmp = path + ".ds41f-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write("".join(line + "\n" for line in lines))
    os.chmod(tmp, mode)
    if owner:
        os.chown(tmp, *owner)
    os.replace(tmp, path)


def run(module):
    p = module.params
    path, marker = p["authorized_keys"], p["marker"]
    if p["state"] == "present" and p["public_key"] and (not p["sources"] or not p["command"]):
        module.fail_json(msg="watchdog_access: sources and command are required with state present. Fix: give the "
                             "head's addresses and the restart command.")
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        lines = []
    ours = [line for line in lines if marked(line, marker)]
    others = [line for line in lines if not marked(line, marker)]
    plan = Plan(module)
    plan.manages("authorized_key", path, marker=marker, state=p["state"])
    about = ("authorized_key", path)
    found = "\n".join(ours) or None
    if p["state"] == "absent":
        if ours:
            plan.change("%s %s entry" % (path, marker), None, found, "remove the %s entry from %s" % (marker, path),
                        lambda: write(path, others), about=about)
        module.exit_json(**plan.result(line=""))
    if not p["public_key"]:  # the head's key is not made yet (check mode before its first run)
        origin = p["key_origin"] or {}
        cause = ("key pair", origin["path"], origin.get("node")) if origin.get("path") else None
        plan.change("%s %s entry" % (path, marker), "the head watchdog's key (not made yet)", found,
                    "the serve stage writes it once the head's key exists", about=about, cause=cause)
        module.exit_json(**plan.result(line=""))
    wanted = entry(p["public_key"], p["sources"], p["command"], marker)
    if ours != [wanted]:
        plan.change("%s %s entry" % (path, marker), wanted, found, "write the %s entry to %s (restricted: from %s, "
                    "only: %s)" % (marker, path, ",".join(p["sources"]), p["command"]),
                    lambda: write(path, others + [wanted]), about=about)
    module.exit_json(**plan.result(line=wanted))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
