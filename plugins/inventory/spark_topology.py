# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: spark_topology
short_description: A DGX Spark cluster from one short site file
version_added: 0.1.0
description:
  - Reads a site file naming the cluster shape and the nodes in rank order, and yields the hosts,
    groups and per-node fabric variables the stages use.
  - Groups are C(spark_cluster), C(spark_head), C(spark_workers) and one per shape, such as C(spark_tp4_ring).
  - Every node gets C(spark_rank), C(spark_links) (per PCIe path - netdev, hca, port, path, peer, peer
    netdev, cidr, address, peer address), C(spark_nccl_hcas) and C(spark_peer_hcas); the cluster group
    carries C(spark_shape) (the memory sizing), C(spark_nodes), C(spark_cables) and the GID and MTU policy.
  - Addresses are derived from the cabling alone - by default C(10.<a><b>.<path>.<node>/24) for the cable
    between nodes a<b, or carved from O(fabric_pool) - so they are the same on every run and nothing is stored.
  - An invalid site fails the inventory parse with one line per problem, each naming the field and the fix.
    The stage playbooks stop when no site parsed; C(unparsed_is_failed = True) in ansible.cfg also stops
    ansible-inventory and ad-hoc commands.
  - Sets the collection's recipe (its C(group_vars/all/*.yml)) on the group C(all), below every C(group_vars)
    file, so no vars plugin needs to be enabled.
  - The file name must end in C(.spark.yml) or C(.spark.yaml).
  - Host keys are pinned in the file C(known_hosts) beside the site file (`ds41f hostkeys` records it; the lab
    writes its own). Every node's C(ansible_ssh_common_args) starts with C(-o UserKnownHostsFile=<that file>) (a
    value the site's O(vars) sets follows it), so with the project's C(StrictHostKeyChecking=yes) a node whose key
    is not the pinned one is unreachable. The cluster group carries the pinned entries of its nodes as
    C(spark_known_hosts) (the serve stage gives them to the head's watchdog) and the file's path as
    C(spark_known_hosts_file).
  - The cluster group carries the site file's folder as C(spark_site_dir). A file the site names on the controller
    by a relative path (C(serve_tls_certificate), C(serve_tls_key)) is read from there.
options:
  plugin:
    description: The name of this plugin.
    required: true
    type: str
    choices: [dgxspark.ds41f.spark_topology]
  shape:
    description: The cluster shape.
    required: true
    type: str
    choices: [tp3-triangle, tp3-triangle-4k, tp4-ring, tp3-switched, tp4-switched, tp5-switched,
              tp6-switched, tp7-switched, tp8-switched]
  nodes:
    description:
      - The nodes in rank order; rank 0 is the head.
      - Each has C(name) and C(address) (management IPv4), and optionally C(rank), C(management_interface)
        and C(cables), a per-port override mapping a port (0 or 1) to C(peer:port).
    required: true
    type: list
    elements: dict
  ssh_user:
    description: The SSH user on every node.
    type: str
  management_interface:
    description: The management netdev, used for socket bootstrap.
    type: str
    default: enP7s7
  management_network:
    description: The management network; the fabric must not overlap it.
    type: str
  fabric_pool:
    description: A pool to carve one /24 per fabric path from, instead of the default 10.<a><b>.<path>.0/24.
    type: str
  gid_index:
    description: The RoCE v2 GID slot every node must use, or C(auto).
    type: raw
    default: 3
  mtu:
    description: The fabric MTU.
    type: int
    default: 9000
  switch_ports:
    description: Switched shapes only - the ConnectX-7 ports cabled to the switch.
    type: list
    elements: int
    default: [0]
  context:
    description: A shorter per-request context than the shape's maximum.
    type: int
  vars:
    description:
      - Site overrides of the recipe, set on every node (above C(group_vars), below extra vars).
    type: dict
"""

EXAMPLES = r"""
# inventories/ring4/site.spark.yml
plugin: dgxspark.ds41f.spark_topology
shape: tp4-ring
ssh_user: ubuntu
nodes:
  - {name: dgx1, address: 192.168.1.11}
  - {name: dgx2, address: 192.168.1.12}
  - {name: dgx3, address: 192.168.1.13}
  - {name: dgx4, address: 192.168.1.14}
"""

import os
import shlex

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin

from ansible_collections.dgxspark.ds41f.plugins.module_utils import known_hosts, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain
from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import recipe_files


class InventoryModule(BaseInventoryPlugin):
    NAME = "dgxspark.ds41f.spark_topology"
    # The site file is the administrator's own inventory, like an INI or YAML inventory: its values are trusted.
    trusted_by_default = True

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".spark.yml", ".spark.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        site = plain(loader.load_from_file(path, cache="none"))
        if not isinstance(site, dict) or site.get("plugin") not in (self.NAME, "spark_topology"):
            raise AnsibleParserError("invalid site %s (1 problem):\n  - plugin: must be %s. Fix: start the site file "
                                     "with plugin: %s and write it as YAML keys (shape, nodes, ...)." % (
                                         path, self.NAME, self.NAME))
        try:
            cluster = topology.build(site, source=path)
        except topology.TopologyError as exc:
            raise AnsibleParserError(str(exc)) from exc
        self.populate(cluster, site)
        site_dir = os.path.dirname(os.path.abspath(path))
        # Files the site names on the controller (its TLS certificate and key) may be relative to it.
        self.inventory.set_variable("spark_cluster", "spark_site_dir", site_dir)
        self.pin_host_keys(cluster, os.path.join(site_dir, known_hosts.FILE_NAME))

    def pin_host_keys(self, cluster, pinned):
        """Every node checked against the site's known_hosts (absent: no node is reachable until it is recorded)."""
        try:
            with open(pinned) as handle:
                text = handle.read()
        except FileNotFoundError:
            text = ""
        own = cluster.extra_vars.get("ansible_ssh_common_args") or ""
        args = " ".join(filter(None, ("-o UserKnownHostsFile=%s" % shlex.quote(pinned), own)))
        port = cluster.extra_vars.get("ansible_port") or 22
        tokens = [known_hosts.host_token(node.address, port) for node in cluster.nodes]
        for node in cluster.nodes:
            self.inventory.set_variable(node.name, "ansible_ssh_common_args", args)
        self.inventory.set_variable("spark_cluster", "spark_known_hosts_file", pinned)
        self.inventory.set_variable("spark_cluster", "spark_known_hosts", known_hosts.lines_for(text, tokens))

    def populate(self, cluster, site):
        inv = self.inventory
        # The collection's recipe on the group all, the lowest inventory level: it loads whatever ansible.cfg
        # enables, and the site's own group_vars (all.yml included) and its vars: still override it.
        for key, value in recipe_files.load(self.loader).items():
            inv.set_variable("all", key, value)
        groups = cluster.group_names() + ["spark_head", "spark_workers"]
        for group in groups:
            inv.add_group(group)
        for node in cluster.nodes:
            inv.add_host(node.name, group="spark_cluster")
            inv.add_host(node.name, group=groups[1])
            inv.add_host(node.name, group="spark_head" if node.rank == 0 else "spark_workers")
            for key, value in cluster.hostvars(node.name).items():
                inv.set_variable(node.name, key, value)
        for key, value in cluster.groupvars().items():
            inv.set_variable("spark_cluster", key, value)
        # The site as written, so the validation play can rebuild and cross-check the model.
        inv.set_variable("spark_cluster", "spark_site", {k: v for k, v in site.items() if k != "vars"})
        # The names its vars: sets, so the validation's messages can say a value is written there.
        inv.set_variable("spark_cluster", "spark_site_vars", sorted(cluster.extra_vars))
        # Site overrides of the recipe: host variables, so they rank above every group_vars (the recipe
        # included) yet below extra vars.
        for node in cluster.nodes:
            for key, value in cluster.extra_vars.items():
                inv.set_variable(node.name, key, value)
