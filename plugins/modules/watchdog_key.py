# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: watchdog_key
short_description: The head watchdog's own SSH key pair and the pinned host keys it trusts
version_added: 0.3.0
description:
  - Keeps, in O(dir) (root, 0700), the key pair the serving watchdog restarts the workers with - C(id_ed25519)
    (0600) and C(id_ed25519.pub) (0644) - and C(known_hosts) (0644), the pinned host keys of the cluster's nodes.
  - The pair is one object (kind C(key pair)). A missing or unreadable private half, a public half that is not
    its own, or either half's mode or owner is a row about it.
  - The pair is generated on this node with C(ssh-keygen) when it is missing or unreadable; its private half never
    leaves the node. The public half (read from the private key) is returned, for the workers' C(authorized_keys)
    (M(dgxspark.ds41f.watchdog_access)).
  - C(known_hosts) holds exactly O(known_hosts) - the entries the controller itself checks the nodes against (the
    site's C(known_hosts), which the inventory plugin gives as C(spark_known_hosts)) - so the watchdog's ssh trusts
    no key the controller does not.
options:
  dir:
    description: The watchdog's SSH folder.
    type: path
    required: true
  known_hosts:
    description: The pinned host key entries (known_hosts lines) the watchdog's ssh checks the workers against.
    type: list
    elements: str
    required: true
  comment:
    description: The comment a new key pair gets.
    type: str
    default: ds41f-watchdog
attributes:
  check_mode:
    support: full
    description: Reads and compares; generates and writes nothing (a missing pair's public half is then empty).
  diff_mode:
    support: full
    description: The known_hosts before and after; a key's change is named, never shown.
  idempotent:
    support: full
    description: A pair that reads, and the same entries, are left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The watchdog's key pair and known_hosts on the head
  dgxspark.ds41f.watchdog_key:
    dir: /etc/ds41f/serve/watchdog
    known_hosts: "{{ spark_known_hosts }}"
"""

RETURN = r"""
public_key:
  description: The public half (C(type key comment)); empty in check mode while there is no pair.
  returned: always
  type: str
key_file:
  description: The private half's path (for the watchdog's C(ssh -i)).
  returned: always
  type: str
known_hosts_file:
  description: The known_hosts path (for the watchdog's C(ssh -o UserKnownHostsFile)).
  returned: always
  type: str
drift:
  description: What differs, each row about its file.
  returned: always
  type: list
  elements: dict
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, write_file

MODULE_SPEC = dict(argument_spec={"dir": {"type": "path", "required": True},
                                  "known_hosts": {"type": "list", "elements": "str", "required": True},
                                  "comment": {"type": "str", "default": "ds41f-watchdog"}},
                   supports_check_mode=True)


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def public_of(module, private):
    """The public half of a private key file (ssh-keygen -y), or None when it does not read as one. Read through a
    pipe: ssh-keygen refuses a key file whose mode is too open, which is the mode's row, not a lost key."""
    text = read(private)
    if not text:
        return None
    rc, out, _ = module.run_command(["ssh-keygen", "-y", "-f", "/dev/stdin"], data=text, binary_data=True)
    return out.strip() if rc == 0 and out.strip() else None


def attributes(plan, path, mode, about):
    """One change when ``path`` exists and is not root's with ``mode``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) != (mode, 0, 0):
        plan.change("%s attributes" % path, "%04o root:root" % mode, "%04o uid %d gid %d" % (
            stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid), "chmod %04o %s; chown root:root %s" % (mode, path, path),
            lambda: (os.chmod(path, mode), os.chown(path, 0, 0)), about=about)


def run(module):
    folder, comment = module.params["dir"], module.params["comment"]
    private, public, pinned = (os.path.join(folder, n) for n in ("id_ed25519", "id_ed25519.pub", "known_hosts"))
    # The pair is one object: a new one is as good as the old (the workers' entries follow it), so it is judged as a
    # pair whose halves match, never by its bytes.
    pair = ("key pair", private)
    plan = Plan(module)
    plan.manages("directory", folder, mode="0700", owner="root", group="root")
    plan.manages("key pair", private, mode="0600", owner="root", group="root")
    if not os.path.isdir(folder):
        plan.change(folder, "folder 0700 root:root", "absent", "create %s" % folder,
                    lambda: (os.makedirs(folder, mode=0o700), os.chmod(folder, 0o700)), about=("directory", folder))
    attributes(plan, folder, 0o700, ("directory", folder))

    state = {"public": public_of(module, private)}

    def generate():
        for path in (private, public):
            if os.path.lexists(path):
                os.unlink(path)
        module.run_command(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", private],
                           check_rc=True)
        state["public"] = public_of(module, private)

    if state["public"] is None:
        plan.change(private, "an ed25519 key pair made on this node", "absent" if not os.path.exists(private) else
                    "not a private key", "ssh-keygen -t ed25519 -f %s (a new pair: the workers' authorized_keys "
                    "follow)" % private, generate, about=pair)
    else:
        attributes(plan, private, 0o600, pair)
        pub_text = state["public"] + "\n"
        if read(public) != pub_text:
            plan.change(public, "the private key's public half", "absent" if read(public) is None else "another key",
                        "write %s" % public, lambda: write_file(public, pub_text, 0o644), about=pair)
        else:
            attributes(plan, public, 0o644, pair)
    wanted = "".join(line.strip() + "\n" for line in module.params["known_hosts"])
    found = read(pinned)
    if found != wanted:
        plan.change(pinned, wanted, found, "write %s (the site's pinned host keys)" % pinned,
                    lambda: write_file(pinned, wanted, 0o644), about=("file", pinned))
    plan.file_attributes(pinned, "0644")
    module.exit_json(**plan.result(public_key=state["public"] or "", key_file=private, known_hosts_file=pinned))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
