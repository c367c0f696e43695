"""`ds41f lab up|down|status`: create, wire and remove a lab cluster from a site file."""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
import time
from pathlib import Path

import yaml

from ds41f import paths
from ds41f.lab import cables, image, podman

LABEL = "ds41f.lab"
SHARED_MOUNT = "/opt/ds41f-lab"  # read-only host folder (.lab/shared) that stages may use for lab-only inputs
# Privileged so dockerd, netplan apply and nested containers work; the masks keep host-wide kernel
# settings (vm, fs, mm) out of reach of anything that runs inside (LAB-NOTES: keep the host safe first).
NODE_ARGS = (
    "--privileged", "--cgroupns=private", "--systemd=false",
    "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "--stop-timeout", "30",
    # The engine runs with --ipc host as on a Spark and needs ~160 MiB of /dev/shm (podman's default is 64 MiB).
    "--shm-size", "1g",
    # /dev/watchdog*: a privileged node sees the host's /dev, and a systemd watchdog setting inside must
    # never arm the host's watchdog.
    "--security-opt", "mask=/proc/sys/vm:/proc/sys/fs:/sys/kernel/mm:/dev/watchdog:/dev/watchdog0",
)


def find_site(site):
    """A site file, or the one *.spark.yml in a folder."""
    path = Path(site)
    if path.is_dir():
        found = sorted(path.glob("*.spark.y*ml"))
        if len(found) != 1:
            raise podman.LabError("%s holds %d site files (*.spark.yml); name one." % (path, len(found)))
        path = found[0]
    if not path.is_file():
        raise podman.LabError("no site file at %s" % path)
    return path


def load(site):
    path = find_site(site)
    raw = yaml.safe_load(path.read_text())
    model = paths.topology()
    try:
        cluster = model.build(raw, source=str(path))
    except model.TopologyError as exc:
        raise podman.LabError(str(exc)) from exc
    return path, raw, cluster


def node_mac(address):
    """A fixed MAC per management address: a restarted node (ds41f.lab.reboot) keeps it, so no neighbour
    holds a stale ARP entry for it (which stalled SSH for about 50 s after a restart)."""
    return "02:d4:1f:%02x:%02x:%02x" % tuple(int(x) for x in address.split(".")[1:])


class Lab:
    def __init__(self, name):
        self.name = name
        self.state = paths.LAB_STATE / name
        self.network = "ds41f-%s" % name
        self.key = self.state / "id_ed25519"
        self.inventory = self.state / "inventory"

    def container(self, node):
        return "ds41f-%s-%s" % (self.name, node)

    # -- up --------------------------------------------------------------------------------------

    def up(self, site_path, raw, cluster, log=print):
        start = time.monotonic()
        subnet = self.subnet(cluster)
        img = image.ensure(log)
        self.state.mkdir(parents=True, exist_ok=True)
        (paths.LAB_STATE / "shared").mkdir(exist_ok=True)
        self.ensure_network(subnet)
        self.ensure_key()
        created = [node.name for node in cluster.nodes if self.ensure_node(node, img)]
        if created:  # new machines: facts cached for the old ones no longer hold
            self.forget_facts()
        self.wait_systemd(cluster, log=log)
        self.new_host_keys(created)
        wired = self.wire(cluster)
        self.authorize(cluster)
        self.wait_ssh(cluster)
        self.write_inventory(site_path, raw, self.host_keys(cluster))
        log("lab %s: %d nodes up (%s), %d cable paths wired, inventory %s (%.0f s)" % (
            self.name, len(cluster.nodes), cluster.shape.name, wired,
            self.inventory.relative_to(paths.ROOT), time.monotonic() - start))
        return self.inventory

    def forget_facts(self):
        """Empty the lab's fact cache, keeping its folder: the ansible-playbook that runs `ds41f lab up` (molecule's
        create) made it at its start and writes its own facts there when the task ends."""
        facts = self.state / "facts"
        for path in facts.iterdir() if facts.is_dir() else ():
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def subnet(self, cluster):
        if cluster.management_network:
            net = ipaddress.ip_network(cluster.management_network)
        else:
            net = ipaddress.ip_network(cluster.head.address + "/24", strict=False)
        addrs = [ipaddress.ip_address(n.address) for n in cluster.nodes]
        if any(a not in net for a in addrs):
            raise podman.LabError("the lab's nodes must share one management subnet (%s). Fix: set "
                                  "management_network in the site file." % net)
        if net.network_address + 1 in addrs:
            raise podman.LabError("%s is the lab network's gateway (the controller). Fix: give the node "
                                  "another address in %s." % (net.network_address + 1, net))
        return net

    def ensure_network(self, subnet):
        if podman.exists("network", self.network):
            have = podman.run("network", "inspect", "-f", "{{range .Subnets}}{{.Subnet}}{{end}}",
                              self.network).stdout.strip()
            if have != str(subnet):
                raise podman.LabError("lab network %s has subnet %s, the site wants %s. Fix: ds41f lab down %s." % (
                    self.network, have, subnet, self.name))
            return
        # Internal: no NAT and no route out, so nothing the tests send can leave this machine.
        podman.run("network", "create", "--internal", "--subnet", subnet, "--label", "%s=%s" % (LABEL, self.name),
                   self.network)

    def ensure_key(self):
        if not self.key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ds41f-lab-" + self.name,
                            "-f", str(self.key)], check=True)

    def ensure_node(self, node, img):
        """Start the node's container; True when it had to be created."""
        name = self.container(node.name)
        if podman.exists("container", name):
            if podman.inspect(name, "{{.State.Running}}") != "true":
                podman.run("start", name)
            return False
        podman.run("run", "-d", "--name", name, "--hostname", node.name,
                   "--label", "%s=%s" % (LABEL, self.name), "--label", "ds41f.node=%s" % node.name,
                   "--network", self.network, "--ip", node.address, "--mac-address", node_mac(node.address),
                   "-v", "%s:%s:ro" % (paths.LAB_STATE / "shared", SHARED_MOUNT),
                   *NODE_ARGS, img)
        return True

    def wait_systemd(self, cluster, timeout=120, log=print, restart_degraded=True):
        """Every node's systemd up; a node that stalls or exits during boot (seen under heavy load) is restarted
        once before giving up. A degraded node's failed units are logged, so that a later failure (no docker, say)
        names its cause; with restart_degraded (a lab coming up, not one node's reboot) it is restarted once
        first, and used as it is if it comes back degraded."""
        for node in cluster.nodes:
            name = self.container(node.name)
            for attempt in (1, 2):
                state = self.boot_state(name, timeout)
                if state == "running":
                    break
                if state == "degraded":
                    failed = podman.exec_(name, "systemctl", "--failed", "--no-legend", "--plain",
                                          check=False).stdout.splitlines()
                    log("%s: systemd is degraded (attempt %d), failed units: %s" % (
                        node.name, attempt, " ".join(row.split()[0] for row in failed if row.strip()) or "none"))
                    if attempt == 2 or not restart_degraded:
                        break
                elif attempt == 2:
                    raise podman.LabError("%s: systemd is %r after %d s, twice. Fix: podman logs %s" % (
                        node.name, state, timeout, name))
                podman.run("restart", "-t", "5", name, check=False)

    @staticmethod
    def boot_state(name, timeout):
        deadline = time.monotonic() + timeout
        state = "unknown"
        while time.monotonic() < deadline:
            if podman.inspect(name, "{{.State.Running}}") != "true":
                return "exited"
            state = podman.exec_(name, "systemctl", "is-system-running", check=False).stdout.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.5)
        return state

    def wire(self, cluster):
        count = 0
        if cluster.shape.fabric == "switched":
            cables.ensure_switch(self.name, cluster.mtu)
        for row in cluster.cable_table():
            a = self.container(row["a"])
            if row["b"] == "switch":
                rank = cluster.node(row["a"]).rank
                port = "p%dn%d%d" % (rank, row["a_port"], row["path"])
                cables.connect_switch(self.name, a, row["a_netdev"], port, cluster.mtu)
            else:
                cables.connect(a, row["a_netdev"], self.container(row["b"]), row["b_netdev"])
            count += 1
        return count

    def new_host_keys(self, nodes):
        """A new node's own SSH host keys, as a machine makes them at its first boot: the image's, made once when it
        was built, would be every node's."""
        for name in nodes:
            podman.exec_(self.container(name), "sh", "-c", "rm -f /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub "
                         "&& ssh-keygen -A && systemctl restart ssh")

    def host_keys(self, cluster):
        """The known_hosts of the lab: each node's public host keys read inside its container (not over the
        network, where anything could answer), under its management address."""
        lines = []
        for node in cluster.nodes:
            out = podman.exec_(self.container(node.name), "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub").stdout
            for key in out.splitlines():
                words = key.split()
                if len(words) >= 2:
                    lines.append("%s %s %s %s" % (node.address, words[0], words[1], node.name))
        return "".join(line + "\n" for line in lines)

    def authorize(self, cluster):
        pub = (self.key.with_suffix(".pub")).read_text()
        for node in cluster.nodes:
            podman.exec_(self.container(node.name), "sh", "-c",
                         "install -d -m 700 /root/.ssh && cat > /root/.ssh/authorized_keys && "
                         "chmod 600 /root/.ssh/authorized_keys", input=pub)

    def wait_ssh(self, cluster, timeout=60):
        deadline = time.monotonic() + timeout
        for node in cluster.nodes:
            while True:
                try:
                    with socket.create_connection((node.address, 22), timeout=1) as sock:
                        if sock.recv(4).startswith(b"SSH"):
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise podman.LabError("%s (%s): no SSH after %d s" % (node.name, node.address, timeout))
                time.sleep(0.3)

    def write_inventory(self, site_path, raw, pinned):
        """The site as written, plus how to reach the lab nodes, and their pinned host keys beside it (the known_hosts
        the inventory plugin points ssh at): the playbooks' inventory."""
        if self.inventory.exists():
            shutil.rmtree(self.inventory)
        self.inventory.mkdir(parents=True)
        site = dict(raw)
        site["ssh_user"] = "root"
        site["vars"] = dict(raw.get("vars") or {}, **{
            "ansible_ssh_private_key_file": str(self.key),
            "spark_lab": self.name,
        })
        header = "# Written by `ds41f lab up` from %s; edit that file, not this one.\n" % site_path
        (self.inventory / "hosts.spark.yml").write_text(header + yaml.safe_dump(site, sort_keys=False))
        (self.inventory / "known_hosts").write_text(pinned)
        for sub in ("group_vars", "host_vars"):
            src = site_path.parent / sub
            if src.is_dir():
                shutil.copytree(src, self.inventory / sub)

    # -- down / status -----------------------------------------------------------------------------

    def down(self, log=print):
        made = podman.containers("%s=%s" % (LABEL, self.name))
        names = [c["Names"][0] for c in made]
        if names:
            # -v: with its anonymous /var/lib/docker volume (the node image declares it), which would otherwise
            # stay on this machine's disk, a few hundred MB a node.
            podman.run("rm", "-f", "-v", "-t", "5", *names)
        if podman.exists("network", self.network):
            podman.run("network", "rm", "-f", self.network)
        cables.remove_switch(self.name)
        if self.state.exists():
            shutil.rmtree(self.state)
        log("lab %s: removed %d nodes" % (self.name, len(names)))

    def status(self):
        rows = []
        for c in podman.containers("%s=%s" % (LABEL, self.name)):
            rows.append((c["Labels"].get("ds41f.node", "?"), c["Names"][0], c["State"]))
        return sorted(rows)


def all_labs():
    return sorted({c["Labels"][LABEL] for c in podman.containers(LABEL)})
