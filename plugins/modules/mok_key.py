# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: mok_key
short_description: The module-signing key DKMS uses (Machine Owner Key), and whether Secure Boot trusts it
version_added: 0.1.0
description:
  - Reuses the key pair /etc/dkms/framework.conf already names when both files exist (for example the one a
    fan-control module was signed with); otherwise creates one in O(directory) (directory 0700, private key
    0600) with openssl and points framework.conf's C(mok_signing_key) and C(mok_certificate) at it, leaving its
    other lines alone.
  - Fails when a framework.conf.d drop-in names another key, since it would override framework.conf.
  - Reads Secure Boot (C(mokutil --sb-state)) and whether the certificate is enrolled (C(mokutil --test-key),
    judged by its text, not its exit status). Enrolling needs the firmware's MOK manager at the console, which
    no play can reach; RV(enrollment) and RV(instructions) say what a person must do.
  - Fails, naming those steps, when Secure Boot is on and the key is not enrolled (a module signed with it would
    not load), in check mode too; the key and framework.conf are made first outside check mode, so the steps can
    name the certificate to enroll.
options:
  directory:
    description: Where a new key pair goes.
    type: path
    default: /root/.local/share/dgx-spark-memory-saver/keys
  subject:
    description: The certificate subject of a new key.
    type: str
    default: /CN=DGX Spark local module signing/
  days:
    description: Validity of a new certificate.
    type: int
    default: 3650
  framework_conf:
    description: The DKMS framework file.
    type: path
    default: /etc/dkms/framework.conf
attributes:
  check_mode:
    support: full
    description: Reads the key files, framework.conf and mokutil; creates and edits nothing in check mode.
  diff_mode:
    support: full
    description: framework.conf's signing lines and the key files before and after.
  idempotent:
    support: full
    description: An existing, configured key is reused; nothing changes on a second run.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: DKMS signing key
  dgxspark.ds41f.mok_key:
  register: mok
"""

RETURN = r"""
private_key:
  description: The signing key DKMS uses.
  returned: always
  type: str
certificate:
  description: Its DER certificate (what mokutil enrolls).
  returned: always
  type: str
secure_boot:
  description: true, false, or null where it cannot be read (no EFI, no mokutil).
  returned: always
  type: bool
enrollment:
  description: enrolled, pending (queued for the MOK manager), not-enrolled or unknown.
  returned: always
  type: str
instructions:
  description: What a person must do at the console, when Secure Boot is on and the key is not enrolled (the
    module fails then, with these steps in its message).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import mok
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host


def set_signing(text, key, cert):
    """framework.conf with the two signing lines set (replaced where they were, appended otherwise)."""
    wanted = {"mok_signing_key": key, "mok_certificate": cert}
    out, seen = [], set()
    for line in (text or "").splitlines():
        name = line.strip().split("=", 1)[0]
        if name in wanted:
            if name in seen:
                continue
            line = '%s="%s"' % (name, wanted[name])
            seen.add(name)
        out.append(line)
    out += ['%s="%s"' % (name, value) for name, value in wanted.items() if name not in seen]
    return "\n".join(out) + "\n"


def instructions(cert, enrollment, node):
    """What a person must do before a module signed with cert loads under Secure Boot."""
    steps = []
    if enrollment != "pending":
        steps.append("on %s: sudo mokutil --import %s (choose a one-time password)" % (node, cert))
    steps += [
        "at %s's console (keyboard and screen; SSH cannot reach it): reboot, and in the blue MOK manager choose "
        "Enroll MOK, Continue, Yes, type the password, Reboot" % node,
        "check: mokutil --test-key %s says 'is already enrolled'" % cert,
        "then run the memory_saver stage again; it resumes from here",
    ]
    return steps


def console_steps(secure_boot, enrollment, cert, node):
    """The steps a person must take, and the failure naming them; ([], None) when nothing is in the way."""
    if not secure_boot or enrollment == "enrolled":
        return [], None
    steps = instructions(cert, enrollment, node)
    return steps, "Secure Boot is on and %s is %s. A module signed with it would not load. Steps: %s" % (
        cert, enrollment, " | ".join(steps))


MODULE_SPEC = dict(
    argument_spec={
        "directory": {"type": "path", "default": "/root/.local/share/dgx-spark-memory-saver/keys"},
        "subject": {"type": "str", "default": "/CN=DGX Spark local module signing/"},
        "days": {"type": "int", "default": 3650},
        "framework_conf": {"type": "path", "default": mok.FRAMEWORK_CONF},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    conf_text = host.read(p["framework_conf"])
    configured = mok.parse_framework_conf(conf_text)
    overrides = {name: s for name, s in mok.signing_overrides(host).items()
                 if any(s.get(k) != configured.get(k) for k in s)}
    if overrides:
        module.fail_json(msg="framework.conf.d drop-ins set another signing key (%s); DKMS would sign with that. "
                             "Fix: remove those lines, or name the same key in %s." % (
                                 ", ".join(sorted(overrides)), p["framework_conf"]))
    key, cert = configured.get("mok_signing_key"), configured.get("mok_certificate")
    if not (key and cert and os.path.isfile(key) and os.path.isfile(cert)):
        key, cert = os.path.join(p["directory"], "MOK.priv"), os.path.join(p["directory"], "MOK.der")
    if not (os.path.isfile(key) and os.path.isfile(cert)):
        def create():
            os.makedirs(p["directory"], mode=0o700, exist_ok=True)
            os.chmod(p["directory"], 0o700)
            old = os.umask(0o077)
            try:
                module.run_command(["openssl", "req", "-new", "-x509", "-newkey", "rsa:3072", "-nodes", "-days",
                                    str(p["days"]), "-subj", p["subject"], "-addext", "extendedKeyUsage=codeSigning",
                                    "-keyout", key, "-outform", "DER", "-out", cert], check_rc=True)
            finally:
                os.umask(old)
            os.chmod(key, 0o600)
            os.chmod(cert, 0o644)
        plan.change(key, "RSA 3072 key 0600, DER certificate 0644, in a 0700 directory", None,
                    "openssl req -x509 -newkey rsa:3072 -keyout %s -out %s" % (key, cert), create)
    elif os.stat(key).st_mode & 0o077:
        plan.change(key + " mode", "0600", oct(os.stat(key).st_mode & 0o777), "chmod 0600 %s" % key,
                    lambda: os.chmod(key, 0o600))
    wanted = set_signing(conf_text, key, cert)
    if wanted != conf_text:
        def write():
            os.makedirs(os.path.dirname(p["framework_conf"]), mode=0o755, exist_ok=True)
            with open(p["framework_conf"], "w") as handle:
                handle.write(wanted)
        plan.change(p["framework_conf"], wanted, conf_text, "point %s at %s" % (p["framework_conf"], key), write)

    rc, out, err = host.run(["mokutil", "--sb-state"])
    secure_boot = mok.parse_sb_state(out + err) if rc != 127 else None
    enrollment = "unknown"
    if rc != 127 and os.path.isfile(cert):
        _, out, err = host.run(["mokutil", "--test-key", cert])
        enrollment = mok.parse_test_key(out + err)
    steps, problem = console_steps(secure_boot, enrollment, cert, os.uname()[1])
    result = plan.result(private_key=key, certificate=cert, secure_boot=secure_boot, enrollment=enrollment,
                         instructions=steps)
    if problem:
        # The stage stops here: enrolling needs the console. What was made above stays (the key to enroll).
        module.fail_json(msg=problem, **result)
    module.exit_json(**result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
