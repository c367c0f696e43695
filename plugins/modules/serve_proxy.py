# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_proxy
short_description: The head's API proxy (nginx) that asks for the key on every route, in front of an engine on loopback
version_added: 0.1.0
description:
  - Keeps nginx, as a unit of its own (O(unit)), in front of the engine, which listens on C(127.0.0.1:O(engine_port))
    only. The proxy listens on loopback and on O(listen) at O(port), and asks for the API key (an C(Authorization)
    header with C(Bearer <key>)) on every path but C(/health); C(/metrics) also answers O(metrics_clients). A route
    an engine adds is keyed too.
  - The key is read on the node from O(key_file) (the serve stage's key file) and written into a root-only file that
    the config includes (C(key.conf) in O(conf_dir), 0600); it is never an argument nor in the result.
  - Tests a new config with C(nginx -t) before it replaces the old one, then restarts the unit. Stops and disables
    the distribution's own C(nginx.service) (its default site listens on port 80).
  - With O(tls_certificate) and O(tls_key) (the site's files, read on the controller), every listener but loopback
    speaks TLS only, with that certificate; loopback stays plain HTTP for the head's own probes. The two are kept
    in O(conf_dir) as C(tls.crt) (0644) and C(tls.key) (0600, root); a changed pair reloads nginx (C(systemctl
    reload), which tests the config first). Without them, files left there from an earlier TLS setting are
    removed.
  - Reads which sockets listen on O(port) and O(engine_port). The engine's port on anything but loopback is a row
    (an engine that still serves every interface).
  - Installs the distribution's C(nginx) package when nginx is missing (apt).
  - With O(state=absent) the unit and the config are removed.
options:
  state:
    description: Whether the proxy is there.
    type: str
    choices: [present, absent]
    default: present
  conf_dir:
    description: The proxy's folder (0700), with C(nginx.conf), C(key.conf) and, with TLS, C(tls.crt) and C(tls.key).
    type: path
    default: /etc/ds41f/proxy
  unit:
    description: The proxy's unit.
    type: str
    default: ds41f-proxy.service
  listen:
    description: Addresses of the head the API listens on besides loopback (C(serve_listen)).
    type: list
    elements: str
    default: []
  port:
    description: The API's port (C(serve_port)).
    type: int
    required: true
  engine_port:
    description: The engine's own port on loopback (C(serve_engine_port)).
    type: int
    required: true
  key_file:
    description: The serve stage's key file (C(VLLM_API_KEY=<key>)); without it the proxy asks for no key.
    type: path
  metrics_clients:
    description: Addresses that may read C(/metrics) without the key (C(serve_metrics_clients)).
    type: list
    elements: str
    default: []
  tls_certificate:
    description:
      - The site's certificate (PEM, the server's first, then any chain), as the controller read it
        (C(serve_tls_certificate)). With O(tls_key); omitted, the proxy serves plain HTTP.
    type: str
  tls_key:
    description:
      - The site's private key of O(tls_certificate) (PEM, no passphrase), as the controller read it
        (C(serve_tls_key)). Never in the result, the diff or a row.
    type: str
attributes:
  check_mode:
    support: full
    description: Reads the files, the units and the listening sockets; writes, tests and restarts nothing.
  diff_mode:
    support: full
    description: The config, the certificate and the unit before and after (the key files' content is never
      shown).
  idempotent:
    support: full
    description: A second run finds the files as wanted and the unit active, and restarts nothing.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The API's proxy on the head
  dgxspark.ds41f.serve_proxy:
    listen: ["{{ spark_head_address }}"]
    port: 8000
    engine_port: 18000
    key_file: /etc/ds41f/serve/api-key.env
"""

RETURN = r"""
actions:
  description: What was (or in check mode would be) done.
  returned: always
  type: list
  elements: str
drift:
  description: Differences found (setting, expected, found, fix, object).
  returned: always
  type: list
  elements: dict
listening:
  description: The local addresses that listen on O(port) and O(engine_port) (C(ss -ltn)).
  returned: always
  type: dict
findings:
  description: What was read and is the serve stage's start to mend (the engine's port open beyond loopback).
  returned: always
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_state, packages, proxy
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan, write_file

UNIT_DIR = "/etc/systemd/system"
DISTRO_UNIT = "nginx.service"
LOOPBACK = ("127.0.0.1", "[::1]", "::1")


def read(path):
    try:
        with open(path, newline="") as handle:  # as written: a site's PEM file may end its lines with CRLF
            return handle.read()
    except FileNotFoundError:
        return None


def systemctl(module, *argv):
    rc, out, _ = module.run_command(["systemctl", *argv])
    return out.strip()


def listening(module, ports):
    """{port: [local address, ...]} of the TCP sockets that listen on ``ports``."""
    rc, out, _ = module.run_command(["ss", "-Hltn"])
    found = {str(p): [] for p in ports}
    for line in out.splitlines() if rc == 0 else []:
        words = line.split()
        if len(words) >= 4:
            address, _, port = words[3].rpartition(":")
            if port in found and address not in found[port]:
                found[port].append(address)
    return found


def test_config(module, conf):
    """nginx -t of a config not yet in place; fails the module with nginx's words when it does not hold."""
    rc, out, err = module.run_command(["nginx", "-t", "-q", "-c", conf])
    if rc != 0:
        os.remove(conf)
        module.fail_json(msg="the proxy's new config does not pass nginx -t: %s. Fix: correct what it names; an "
                         "address in serve_listen that the head does not have cannot be listened on." % (
                             (err or out).strip()))


MODULE_SPEC = dict(
    argument_spec={
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "conf_dir": {"type": "path", "default": "/etc/ds41f/proxy"},
        "unit": {"type": "str", "default": "ds41f-proxy.service"},
        "listen": {"type": "list", "elements": "str", "default": []},
        "port": {"type": "int", "required": True},
        "engine_port": {"type": "int", "required": True},
        "key_file": {"type": "path"},
        "metrics_clients": {"type": "list", "elements": "str", "default": []},
        "tls_certificate": {"type": "str"},
        "tls_key": {"type": "str", "no_log": True},
    },
    required_together=[("tls_certificate", "tls_key")],
    supports_check_mode=True,
)


def tls_pair(plan, paths, certificate, key):
    """Keep the site's certificate (0644) and key (0600) at ``paths``; whether either was (or would be) written.
    The key's bytes are never in a row or a diff."""
    changed = False
    for path, text, mode, what in ((paths[0], certificate, "0644", "certificate"), (paths[1], key, "0600", "key")):
        have = read(path)
        if have != text:
            shown = (have, text) if what == "certificate" else ("(not shown)" if have is not None else None,
                                                                "(not shown)")
            plan.change("%s (the site's TLS %s)" % (path, what), "the site's %s (serve_tls_%s)" % (what, what),
                        "absent" if have is None else "another %s" % what, "write %s" % path,
                        lambda path=path, text=text, mode=mode: write_file(path, text, int(mode, 8)),
                        about=("file", path), diff=shown)
            changed = True
        plan.file_attributes(path, mode)
    return changed


def run(module):
    p = module.params
    plan = Plan(module, fix="ds41f run serve")  # every row's fix: the operator's command
    conf, key_conf = os.path.join(p["conf_dir"], "nginx.conf"), os.path.join(p["conf_dir"], "key.conf")
    tls_files = (os.path.join(p["conf_dir"], proxy.TLS_CERTIFICATE), os.path.join(p["conf_dir"], proxy.TLS_KEY))
    unit_path = os.path.join(UNIT_DIR, p["unit"])
    found = listening(module, (p["port"], p["engine_port"]))
    if p["state"] == "absent":
        if systemctl(module, "is-enabled", p["unit"]) == "enabled" or systemctl(module, "is-active", p["unit"]) \
                == "active":
            plan.change("%s running" % p["unit"], "absent", "present", "systemctl disable --now %s" % p["unit"],
                        lambda: module.run_command(["systemctl", "disable", "--now", p["unit"]], check_rc=True),
                        about=("unit", p["unit"]))
        for path in (unit_path, conf, key_conf) + tls_files:
            if read(path) is not None:
                plan.change(path, None, "present", "remove %s" % path, lambda path=path: os.remove(path),
                            about=("file", path))
        module.exit_json(**plan.result(listening=found, findings=[]))

    if not packages.ensure(module, plan, "nginx", "nginx"):  # check mode: the rest would follow the install
        module.exit_json(**plan.result(listening=found, findings=[]))
    key = engine_state.api_key(p["key_file"]) if p["key_file"] else None
    if p["key_file"] and key is None and not module.check_mode:
        module.fail_json(msg="%s holds no key (VLLM_API_KEY=...), so the proxy would have none to ask for. Fix: "
                         "ds41f run serve writes it (serve_api_key, or a generated key)." % p["key_file"])
    try:
        key_text = proxy.key_map(key) if key else proxy.OPEN_KEY_MAP
        wanted = proxy.config(p["listen"], p["port"], p["engine_port"], key_conf, p["metrics_clients"],
                              tls_files if p["tls_certificate"] else None)
    except proxy.ProxyError as exc:
        module.fail_json(msg=str(exc))
    plan.manages("directory", p["conf_dir"], mode="0700")
    if not os.path.isdir(p["conf_dir"]):
        plan.change(p["conf_dir"], "a folder (0700)", None, "mkdir -m 0700 %s" % p["conf_dir"],
                    lambda: os.makedirs(p["conf_dir"], mode=0o700), about=("directory", p["conf_dir"]))
    restart = False
    if p["key_file"] and key is None:
        pass  # check mode before the key exists: the key file's own row says so
    elif read(key_conf) != key_text:
        # The key is in the content: the diff and the row say only that it differs.
        plan.change("%s (the key nginx asks for)" % key_conf, "the key of %s" % (p["key_file"] or "none"),
                    "absent" if read(key_conf) is None else "another key", "write %s" % key_conf,
                    lambda: write_file(key_conf, key_text, 0o600), about=("file", key_conf),
                    diff=("(not shown)" if read(key_conf) is not None else None, "(not shown)"))
        restart = True
    # Before the config that names them (nginx -t reads them); a new pair alone is a reload.
    reload = bool(p["tls_certificate"]) and tls_pair(plan, tls_files, p["tls_certificate"], p["tls_key"])
    if read(conf) != wanted:
        def write_conf():
            write_file(conf + ".new", wanted)
            test_config(module, conf + ".new")
            os.replace(conf + ".new", conf)
        plan.change(conf, wanted, read(conf), "write %s (after nginx -t)" % conf, write_conf, about=("file", conf))
        restart = True
    for path, mode in ((key_conf, "0600"), (conf, "0644")):
        plan.file_attributes(path, mode)
    unit_text = proxy.unit(conf)
    if read(unit_path) != unit_text:
        plan.change(unit_path, unit_text, read(unit_path), "write %s; systemctl daemon-reload" % unit_path,
                    lambda: (write_file(unit_path, unit_text),
                             module.run_command(["systemctl", "daemon-reload"], check_rc=True)),
                    about=("file", unit_path))
        restart = True
    plan.file_attributes(unit_path, "0644")
    plan.manages("unit", p["unit"], enabled=True, active=True)
    enabled, active = systemctl(module, "is-enabled", p["unit"]), systemctl(module, "is-active", p["unit"])
    if enabled != "enabled":
        plan.change("%s enabled" % p["unit"], "enabled", enabled or "not found", "systemctl enable %s" % p["unit"],
                    lambda: module.run_command(["systemctl", "enable", p["unit"]], check_rc=True),
                    about=("unit", p["unit"]))
    if active != "active" or restart:
        plan.change("%s running" % p["unit"], "active", active if active != "active" else "active, older than "
                    "its config", "systemctl restart %s" % p["unit"],
                    lambda: module.run_command(["systemctl", "restart", p["unit"]], check_rc=True),
                    about=("unit", p["unit"]), row=active != "active")
    elif reload:
        plan.change("%s certificate" % p["unit"], "the site's", "an older one", "systemctl reload %s" % p["unit"],
                    lambda: module.run_command(["systemctl", "reload", p["unit"]], check_rc=True),
                    about=("unit", p["unit"]), row=False)
    if not p["tls_certificate"]:
        for path in tls_files:  # TLS turned off, after the config that no longer names them
            plan.manages("file", path, state="absent")
            if read(path) is not None:
                plan.change(path, None, "present", "remove %s" % path, lambda path=path: os.remove(path),
                            about=("file", path))
    plan.manages("unit", DISTRO_UNIT, enabled=False, active=False)
    for state, wanted_state, verb in (("is-active", "inactive", "stop"), ("is-enabled", "disabled", "disable")):
        now = systemctl(module, state, DISTRO_UNIT)
        if now in ("active", "activating", "enabled"):
            plan.change("%s %s" % (DISTRO_UNIT, state[3:]), wanted_state, now, "systemctl %s %s" % (verb, DISTRO_UNIT),
                        lambda verb=verb: module.run_command(["systemctl", verb, DISTRO_UNIT], check_rc=True),
                        about=("unit", DISTRO_UNIT))
    # Read, not changed here: the engine is the serve stage's start to replace.
    beyond = [a for a in found[str(p["engine_port"])] if a not in LOOPBACK]
    port = {"kind": "port", "name": "tcp/%d" % p["engine_port"]}
    findings = [{"setting": "engine port %d" % p["engine_port"], "expected": "127.0.0.1 only",
                 "found": "also %s" % ", ".join(beyond), "object": port,
                 "fix": "ds41f run serve -e '{\"serve_replace\": true}' (the engine then listens on loopback only)"}
                ] if beyond else []
    module.exit_json(**plan.result(listening=found, findings=findings))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
