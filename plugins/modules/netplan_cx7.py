# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: netplan_cx7
short_description: Own the persistent configuration of the ConnectX-7 netdevs through one netplan file
version_added: 0.1.0
description:
  - Writes O(path) (mode 0600) from the node's site links - per PCIe path a static address in its own /24,
    the fabric MTU, no DHCP, no IPv6 router advertisements or link-local addresses, C(optional) - with
    the renderer NetworkManager where NetworkManager runs (DGX OS) and networkd elsewhere.
  - Removes every other owner of a CX7 netdev, keeping a copy under O(backup_dir) - CX7 stanzas in other
    netplan files (including NetworkManager's C(90-NM-*.yaml)) and NetworkManager keyfiles in
    C(/etc/NetworkManager/system-connections) - because a second owner silently undoes these settings at
    the next reboot.
  - Applies the configuration only when something changed - networkd - C(netplan generate), C(networkctl
    reload) and C(networkctl reconfigure) of the CX7 netdevs only; NetworkManager - C(netplan generate),
    C(nmcli connection reload) and C(nmcli connection up) of the CX7 profiles only. No udev coldplug and
    no C(netplan apply), so the management connection is never touched. Applying re-activates the changed
    CX7 links; do it while nothing uses RDMA. It then waits (up to 10 s) until the links have their MTU and are
    up, and networkd no longer lists them as being set up, so a check right after it sees the links settled.
  - Writes O(arp_file) so that each CX7 netdev answers ARP only for its own address (C(arp_ignore=1),
    C(arp_announce=2)); the two PCIe functions of a port share a wire, and on a switch an L2 segment.
  - Where the renderer is networkd, also makes sure C(systemd-networkd) is enabled and running.
  - The live state (MTU, link up, addresses) is M(dgxspark.ds41f.fabric_links)'s job.
options:
  links:
    description: This node's C(spark_links) (netdev, address, prefix, peer, path).
    type: list
    elements: dict
    required: true
  mtu:
    description: The fabric MTU.
    type: int
    required: true
  renderer:
    description: The netplan renderer; C(auto) picks NetworkManager when it is running, else networkd.
    type: str
    choices: [auto, NetworkManager, networkd]
    default: auto
  routes:
    description: Extra routes ({netdev, to, via}) written under their netdev (ring transit).
    type: list
    elements: dict
    default: []
  path:
    description: The netplan file this module owns.
    type: path
    default: /etc/netplan/40-cx7.yaml
  arp_file:
    description: The sysctl.d file with the CX7 netdevs' ARP settings.
    type: path
    default: /etc/sysctl.d/60-ds41f-cx7-arp.conf
  backup_dir:
    description: Where copies of removed stanzas and profiles go (one timestamped folder per run that removes).
    type: path
    default: /var/backups/ds41f/fabric
  apply:
    description: Apply a changed configuration right away (otherwise at the next boot).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reads everything and reports the writes, removals and the apply it would do.
  diff_mode:
    support: full
    description: The netplan file and every edited file, before and after.
  idempotent:
    support: full
    description: The file is rendered byte-for-byte from the links; a second run finds nothing to do.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: CX7 netplan
  dgxspark.ds41f.netplan_cx7:
    links: "{{ spark_links }}"
    mtu: "{{ spark_mtu }}"
"""

RETURN = r"""
renderer:
  description: The renderer used.
  returned: always
  type: str
  sample: NetworkManager
path:
  description: The netplan file.
  returned: always
  type: str
applied:
  description: Whether the configuration was applied in this run.
  returned: always
  type: bool
backups:
  description: Copies kept of what was removed.
  returned: always
  type: list
  elements: str
actions:
  description: What was done (or would be, in check mode).
  returned: always
  type: list
  elements: str
drift:
  description: One entry per difference (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
"""

import glob
import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import links as live
from ansible_collections.dgxspark.ds41f.plugins.module_utils import netplan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import ALL_NETDEVS

NM_PROFILES = "/etc/NetworkManager/system-connections"
SETTLE_SECONDS = 10


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


class Netplan:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.plan = Plan(module)
        self.backups = []
        self.stamp = time.strftime("%Y%m%dT%H%M%S")

    def run(self, argv):
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(msg="%s failed (%d): %s" % (" ".join(argv), rc, (err or out).strip()),
                                  actions=self.plan.actions)
        return out

    def renderer(self):
        wanted = self.params["renderer"]
        if wanted != "auto":
            return wanted
        rc, _, _ = self.module.run_command(["systemctl", "is-active", "--quiet", "NetworkManager"])
        return "NetworkManager" if rc == 0 else "networkd"

    def backup(self, path):
        dest = os.path.join(self.params["backup_dir"], self.stamp, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
        shutil.copy2(path, dest)
        self.backups.append(dest)

    def write(self, path, text, mode):
        tmp = "%s.ds41f-tmp" % path
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.rename(tmp, path)

    def converge_file(self, renderer):
        path = self.params["path"]
        wanted = netplan.render(self.params["links"], self.params["mtu"], renderer, self.params["routes"])
        found = read(path)
        if found != wanted:
            self.plan.change(path, wanted, found, "write %s (renderer %s)" % (path, renderer),
                             lambda: self.write(path, wanted, 0o600))
        self.plan.file_attributes(path, "0600")  # netplan refuses a file others can read

    def converge_arp_file(self):
        path = self.params["arp_file"]
        wanted = netplan.arp_sysctl(link["netdev"] for link in self.params["links"])
        found = read(path)
        if found != wanted:
            self.plan.change(path, wanted, found, "write %s" % path, lambda: self.write(path, wanted, 0o644))
        self.plan.file_attributes(path, "0644")

    def remove_strays(self):
        path = os.path.realpath(self.params["path"])
        for other in sorted(glob.glob("/etc/netplan/*.yaml") + glob.glob("/etc/netplan/*.yml")):
            if os.path.realpath(other) == path:
                continue
            text = read(other) or ""
            try:
                keys = netplan.strays(text)
            except Exception as exc:  # a broken YAML file is the sysadmin's to fix; say so, do not guess
                self.module.fail_json(msg="%s does not parse (%s). Fix it or remove it; netplan fails on it too."
                                      % (other, exc))
            if not keys:
                continue
            rest = netplan.without(text, keys)

            def edit(other=other, rest=rest):
                self.backup(other)
                if rest is None:
                    os.unlink(other)
                else:
                    self.write(other, rest, os.stat(other).st_mode & 0o777)

            what = "remove" if rest is None else "cut %s out of" % ", ".join(keys)
            self.plan.change(other, rest, text, "%s %s (a second owner of CX7 netdevs; backup kept)" % (what, other),
                             edit)

    def remove_nm_profiles(self):
        removed = False
        for profile in sorted(glob.glob(os.path.join(NM_PROFILES, "*"))):
            if not os.path.isfile(profile):
                continue
            netdev = netplan.nm_interface(read(profile) or "")
            if netdev not in ALL_NETDEVS:
                continue

            def drop(profile=profile):
                self.backup(profile)
                os.unlink(profile)

            self.plan.change(profile, None, "NetworkManager profile for %s" % netdev,
                             "remove %s (a second owner of %s; backup kept)" % (profile, netdev), drop)
            removed = True
        return removed

    def networkd_running(self):
        enabled = self.module.run_command(["systemctl", "is-enabled", "--quiet", "systemd-networkd"])[0] == 0
        active = self.module.run_command(["systemctl", "is-active", "--quiet", "systemd-networkd"])[0] == 0
        if not (enabled and active):
            found = "%s, %s" % ("enabled" if enabled else "disabled", "running" if active else "stopped")
            self.plan.change("systemd-networkd", "enabled, running", found,
                             "systemctl enable --now systemd-networkd (it renders the netplan file)",
                             lambda: self.run(["systemctl", "enable", "--now", "systemd-networkd"]))

    def apply(self, renderer):
        present = [link["netdev"] for link in self.params["links"]
                   if os.path.exists("/sys/class/net/" + link["netdev"])]
        self.run(["netplan", "generate"])
        if renderer == "networkd":
            self.run(["networkctl", "reload"])
            if present:
                self.run(["networkctl", "reconfigure"] + present)
        else:
            self.run(["nmcli", "connection", "reload"])
            for link in self.params["links"]:
                if link["netdev"] in present:
                    self.run(["nmcli", "connection", "up", "id", netplan.nm_connection_name(link)])
        self.settle(present, renderer)

    def settle(self, netdevs, renderer):
        """Wait until the renderer has set MTU and link up and, with networkd, has finished setting the links up
        (its addresses too: the live check that follows in the same call must not find a link mid-way). A link
        without carrier may stay set up half-way: the wait ends after SETTLE_SECONDS."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            state = live.read(self.module.run_command)
            if all(state.get(n, {}).get("mtu") == self.params["mtu"] and state[n]["up"] for n in netdevs) and (
                    renderer != "networkd" or not self.networkd_setting_up(netdevs)):
                return
            time.sleep(0.2)

    def networkd_setting_up(self, netdevs):
        rc, out, _ = self.module.run_command(["networkctl", "list", "--no-legend", "--no-pager"])
        return live.networkd_setting_up(out, netdevs) if rc == 0 else []

    def main(self):
        renderer = self.renderer()
        self.converge_file(renderer)
        self.remove_strays()
        nm_removed = self.remove_nm_profiles()
        changed_config = bool(self.plan.actions)
        self.converge_arp_file()  # live values: fabric_links
        if renderer == "networkd":
            self.networkd_running()
        applied = False
        if changed_config and self.params["apply"]:
            how = ("netplan generate; networkctl reload; networkctl reconfigure <CX7 netdevs>"
                   if renderer == "networkd" else
                   "netplan generate; nmcli connection reload; nmcli connection up <CX7 profiles>")
            self.plan.actions.append("apply: %s" % how)
            if not self.module.check_mode:
                if nm_removed and renderer == "NetworkManager":
                    self.run(["nmcli", "connection", "reload"])
                self.apply(renderer)
                applied = True
        self.module.exit_json(**self.plan.result(renderer=renderer, path=self.params["path"], applied=applied,
                                                 backups=self.backups))


MODULE_SPEC = dict(
    argument_spec={
        "links": {"type": "list", "elements": "dict", "required": True},
        "mtu": {"type": "int", "required": True},
        "renderer": {"type": "str", "choices": ["auto", "NetworkManager", "networkd"], "default": "auto"},
        "routes": {"type": "list", "elements": "dict", "default": []},
        "path": {"type": "path", "default": "/etc/netplan/40-cx7.yaml"},
        "arp_file": {"type": "path", "default": "/etc/sysctl.d/60-ds41f-cx7-arp.conf"},
        "backup_dir": {"type": "path", "default": "/var/backups/ds41f/fabric"},
        "apply": {"type": "bool", "default": True},
    },
    supports_check_mode=True,
)


def run(module):
    checks.fail_on(module, checks.elements(module.params["links"], "links", {"netdev": str}),
                   checks.elements(module.params["routes"], "routes", {"to": str, "via": str, "netdev": str}),
                   checks.int_range(module.params["mtu"], "mtu", 1280, 9216))
    Netplan(module).main()


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
