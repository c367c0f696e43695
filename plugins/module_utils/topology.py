# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The one model of a DGX Spark cluster.

A short site file (shape, nodes in rank order, optional cable overrides and address pool) becomes a
``Cluster``: nodes with ranks, cables between ConnectX-7 ports, the two PCIe paths of every port, a /24
per path derived from the cable (never random, never stored), NCCL HCA lists, head and workers.

Everything else (inventory plugin, filters, modules, validation play, docs diagram, lab) reads this
model; nothing re-derives addresses. Pure Python over netaddr so it runs on the controller, in modules
and in unit tests alike.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

try:
    import netaddr
except ImportError:  # pragma: no cover - reported by callers that need it
    netaddr = None

GIB = 1024 ** 3

# ---------------------------------------------------------------------------------------------------
# Shapes: the seeds' shapes table (000_72fb2218289d1604.txt). One image serves every shape; shapes
# differ in cabling, transport, kernel page size and memory sizing.
# ---------------------------------------------------------------------------------------------------

DRAFT_TOKENS = 5  # DSpark drafts per verification step; each stream verifies DRAFT_TOKENS + 1 rows.


@dataclass(frozen=True)
class Shape:
    name: str
    nodes: int
    fabric: str  # triangle | ring | switched
    transport: str
    page_size: int  # the running kernel's base page size the shape needs
    context: int  # tokens per request
    max_seqs: int
    batched_tokens: int
    kv_cache_bytes: int  # KV pool per rank
    min_free_gib_head: float | None
    min_free_gib_workers: float | None
    full_contexts: int  # full-context requests the KV pool holds at once
    qualified_reference: str | None  # release benchmark that qualified the shape; None = unqualified

    @property
    def memory_saver_required(self):
        return self.page_size == 65536

    @property
    def cudagraph_max_rows(self):
        return self.max_seqs * (DRAFT_TOKENS + 1)

    @property
    def long_prefill_threshold(self):
        # Prefill chunks leave room for every stream's decode and draft rows.
        return self.batched_tokens - self.cudagraph_max_rows

    def as_dict(self):
        data = asdict(self)
        data.update(
            memory_saver_required=self.memory_saver_required,
            cudagraph_max_rows=self.cudagraph_max_rows,
            long_prefill_threshold=self.long_prefill_threshold,
            kv_cache_gib=round(self.kv_cache_bytes / GIB, 4),
        )
        return data


_QUALIFIED = "spark-ds41f-1107"
_KV_TP4 = int(10.5 * GIB)
_KV_TP3 = int(4.90625 * GIB)
_KV_4K = int(2.2 * GIB)


def _switched(nodes, head, workers):
    big = nodes >= 4
    return Shape(
        "tp%d-switched" % nodes, nodes, "switched", "oneshot-switched", 65536, 1048576,
        16 if big else 8, 16384 if big else 6144, _KV_TP4 if big else _KV_TP3, head, workers,
        11 if big else 5, _QUALIFIED)


SHAPES = {
    s.name: s
    for s in (
        Shape("tp3-triangle", 3, "triangle", "oneshot-direct", 65536, 1048576, 8, 6144, _KV_TP3,
              6.03, 7.94, 5, _QUALIFIED),
        Shape("tp3-triangle-4k", 3, "triangle", "oneshot-direct", 4096, 262144, 8, 4096, _KV_4K,
              None, None, 8, None),
        Shape("tp4-ring", 4, "ring", "oneshot-ring4", 65536, 1048576, 16, 16384, _KV_TP4,
              21.47, 24.32, 11, _QUALIFIED),
        _switched(3, 6.57, 8.12),
        _switched(4, 21.50, 23.30),
        _switched(5, 28.80, 30.83),
        _switched(6, 43.90, 45.90),
        _switched(7, 43.51, 45.53),
        _switched(8, 52.74, 53.95),
    )
}

# ---------------------------------------------------------------------------------------------------
# DGX Spark ConnectX-7: two QSFP ports, each two PCIe Gen5 x4 functions ("paths") of ~100 Gb/s.
# ---------------------------------------------------------------------------------------------------

PORTS = (0, 1)
PCIE_PATHS = (1, 2)


def port_netdev(port, pcie):
    """Netdev of one PCIe path of a port: path 1 is enp1s0*, path 2 is enP2p1s0*."""
    prefix = "enp1s0" if pcie == 1 else "enP2p1s0"
    return "%sf%dnp%d" % (prefix, port, port)


def port_hca(port, pcie):
    """RDMA device of one PCIe path of a port (rocep1s0f0, roceP2p1s0f0, ...)."""
    prefix = "rocep1s0" if pcie == 1 else "roceP2p1s0"
    return "%sf%d" % (prefix, port)


ALL_NETDEVS = tuple(port_netdev(p, q) for p in PORTS for q in PCIE_PATHS)

DEFAULT_MANAGEMENT_INTERFACE = "enP7s7"
DEFAULT_GID_INDEX = 3
DEFAULT_MTU = 9000
DEFAULT_SWITCH_PORTS = (0,)

# ---------------------------------------------------------------------------------------------------
# Errors: every problem names the site field and the fix.
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    field: str
    message: str
    fix: str

    def __str__(self):
        return "%s: %s Fix: %s" % (self.field, self.message, self.fix)


class TopologyError(ValueError):
    """One or more problems in a site file; str() lists them one per line."""

    def __init__(self, problems, source=None):
        self.problems = list(problems)
        self.source = source
        head = "invalid site%s (%d problem%s):" % (
            " " + source if source else "", len(self.problems), "" if len(self.problems) == 1 else "s")
        super().__init__("\n".join([head] + ["  - %s" % p for p in self.problems]))


# ---------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------


@dataclass
class Node:
    name: str
    rank: int
    address: str
    management_interface: str

    @property
    def number(self):
        """1-based node number: the host part of every fabric address of this node."""
        return self.rank + 1


@dataclass(frozen=True)
class End:
    node: str
    port: int


@dataclass
class Cable:
    """A QSFP cable between two node ports, or from a node port to the switch (b is None)."""
    a: End
    b: End | None
    paths: list = field(default_factory=list)  # [Path]


@dataclass
class Path:
    """One PCIe path of a cable: its /24 and the address of each end."""
    index: int  # 1.. within the pair of nodes (or the rail number on a switch)
    pcie: int
    cidr: str
    addresses: dict  # node name -> address


@dataclass
class Cluster:
    shape: Shape
    nodes: list
    cables: list
    ssh_user: str | None
    gid_index: object
    mtu: int
    fabric_pool: str | None
    management_network: str | None
    context: int
    extra_vars: dict

    @property
    def head(self):
        return self.nodes[0]

    @property
    def workers(self):
        return self.nodes[1:]

    def node(self, name):
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def links(self, name):
        """Per-path view of one node's fabric: what netplan, NCCL and the ping matrix need."""
        out = []
        for cable in self.cables:
            for mine, other in ((cable.a, cable.b), (cable.b, cable.a)):
                if mine is None or mine.node != name:
                    continue
                for path in cable.paths:
                    if other is None:  # switch: every other node on the rail is a peer
                        peers = [
                            {"name": n, "address": a, "netdev": port_netdev(mine.port, path.pcie)}
                            for n, a in sorted(path.addresses.items(), key=lambda kv: self.node(kv[0]).rank)
                            if n != name
                        ]
                    else:
                        peers = [{"name": other.node, "address": path.addresses[other.node],
                                  "netdev": port_netdev(other.port, path.pcie)}]
                    out.append({
                        "netdev": port_netdev(mine.port, path.pcie),
                        "hca": port_hca(mine.port, path.pcie),
                        "port": mine.port,
                        "pcie": path.pcie,
                        "path": path.index,
                        "cidr": path.cidr,
                        "prefix": int(path.cidr.split("/")[1]),
                        "address": path.addresses[name],
                        "peer": other.node if other else None,
                        "peer_port": other.port if other else None,
                        "peer_netdev": port_netdev(other.port, path.pcie) if other else None,
                        "peer_hca": port_hca(other.port, path.pcie) if other else None,
                        "peer_address": path.addresses[other.node] if other else None,
                        "peers": peers,
                    })
        out.sort(key=lambda link: (link["port"], link["pcie"]))
        return out

    def nccl_hcas(self, name):
        return [link["hca"] for link in self.links(name)]

    def peer_hcas(self, name):
        """Per peer rank, this node's HCAs that reach it (switchless shapes)."""
        result = {}
        for link in self.links(name):
            if link["peer"] is not None:
                result.setdefault(self.node(link["peer"]).rank, []).append(link["hca"])
        return result

    def hostvars(self, name):
        node = self.node(name)
        data = {
            "ansible_host": node.address,
            "spark_rank": node.rank,
            "spark_node_number": node.number,
            "spark_is_head": node.rank == 0,
            "spark_management_interface": node.management_interface,
            "spark_links": self.links(name),
            "spark_nccl_hcas": self.nccl_hcas(name),
            "spark_peer_hcas": self.peer_hcas(name),
        }
        if self.ssh_user:
            data["ansible_user"] = self.ssh_user
        return data

    def groupvars(self):
        """Variables every node shares (set on the spark_cluster group)."""
        return {
            "spark_shape": dict(self.shape.as_dict(), context=self.context),
            "spark_head": self.head.name,
            "spark_head_address": self.head.address,
            "spark_nodes": [{"name": n.name, "rank": n.rank, "address": n.address} for n in self.nodes],
            "spark_cables": self.cable_table(),
            "spark_gid_index": self.gid_index,
            "spark_mtu": self.mtu,
            "spark_fabric_pool": self.fabric_pool,
            "spark_management_network": self.management_network,
        }

    def cable_table(self):
        rows = []
        for cable in self.cables:
            for path in cable.paths:
                rows.append({
                    "a": cable.a.node, "a_port": cable.a.port, "a_netdev": port_netdev(cable.a.port, path.pcie),
                    "b": cable.b.node if cable.b else "switch",
                    "b_port": cable.b.port if cable.b else None,
                    "b_netdev": port_netdev(cable.b.port, path.pcie) if cable.b else None,
                    "path": path.index, "cidr": path.cidr, "addresses": dict(path.addresses),
                })
        return rows

    def group_names(self):
        return ["spark_cluster", "spark_" + self.shape.name.replace("-", "_")]


# ---------------------------------------------------------------------------------------------------
# Building the model from a site dict (the inventory plugin's input)
# ---------------------------------------------------------------------------------------------------

PLUGIN = "dgxspark.ds41f.spark_topology"
SITE_KEYS = {
    "plugin": "the inventory plugin name (dgxspark.ds41f.spark_topology)",
    "shape": "the cluster shape",
    "nodes": "the nodes in rank order",
    "ssh_user": "the SSH user on every node",
    "management_interface": "the management netdev (default enP7s7)",
    "management_network": "the management network CIDR (checked for overlap with the fabric)",
    "fabric_pool": "an address pool to carve the fabric /24s from",
    "gid_index": "the RoCE v2 GID index policy: an integer slot or 'auto'",
    "mtu": "the fabric MTU",
    "switch_ports": "switched shapes: the ConnectX-7 ports cabled to the switch",
    "context": "a shorter per-request context than the shape's maximum",
    "vars": "site overrides of the recipe (set on every node)",
}
NODE_KEYS = ("name", "address", "rank", "management_interface", "cables")

# What a name reads as: case folded, and the ASCII look-alikes of host names made one (dgx1, DGXl, dgxI).
_LOOKALIKES = (("rn", "m"), ("vv", "w"), ("0", "o"), ("1", "l"), ("i", "l"))


def skeleton(name):
    """The form two node names share when a person would read one as the other."""
    out = name.lower()
    for pair, one in _LOOKALIKES:
        out = out.replace(pair, one)
    return out


# Matched with fullmatch: "$" would let a trailing newline through.
_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_IFNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}")
_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER_RE = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")


def _not_unicast(ip):
    """What kind of non-host address ``ip`` is, or None for a usable unicast host address."""
    for kind, test in (("the unspecified address", lambda a: a == netaddr.IPAddress("0.0.0.0")),
                       ("a loopback address", lambda a: a.is_loopback()),
                       ("a link-local address", lambda a: a.is_link_local()),
                       ("a multicast address", lambda a: a.is_multicast()),
                       ("the limited broadcast address", lambda a: a == netaddr.IPAddress("255.255.255.255")),
                       ("a reserved address (240.0.0.0/4)", lambda a: a in netaddr.IPNetwork("240.0.0.0/4")),
                       ("in 0.0.0.0/8 (this network)", lambda a: a in netaddr.IPNetwork("0.0.0.0/8"))):
        if test(ip):
            return kind
    return None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class _Builder:
    def __init__(self, site, source):
        self.site = site
        self.source = source
        self.problems = []

    def bad(self, fld, message, fix):
        self.problems.append(Problem(fld, message, fix))

    def fail_if_bad(self):
        if self.problems:
            raise TopologyError(self.problems, self.source)

    # -- top level ---------------------------------------------------------------------------------

    def build(self):
        if netaddr is None:
            raise TopologyError([Problem("python", "the netaddr library is missing on the controller.",
                                         "pip install netaddr (pip install -e . installs it).")], self.source)
        site = self.site
        if not isinstance(site, dict):
            self.bad("site", "must be a mapping, got %s." % type(site).__name__,
                     "write the site file as YAML keys: shape, nodes, ...")
            self.fail_if_bad()
        for key in site:
            if key not in SITE_KEYS:
                known = ", ".join(sorted(SITE_KEYS))
                self.bad(str(key), "is not a site setting.", "remove it or use one of: %s." % known)

        if site.get("plugin", PLUGIN) not in (PLUGIN, "spark_topology"):
            self.bad("plugin", "%r is not this inventory plugin." % (site.get("plugin"),),
                     "write plugin: %s." % PLUGIN)
        shape = self.shape()
        ssh_user = self.optional_str("ssh_user", None, _USER_RE, "a Unix user name")
        mgmt_if = self.optional_str("management_interface", DEFAULT_MANAGEMENT_INTERFACE, _IFNAME_RE,
                                    "a network interface name of at most 15 characters")
        gid = self.gid_index()
        mtu = self.int_setting("mtu", DEFAULT_MTU, 1280, 9216)
        mgmt_net = self.cidr_setting("management_network")
        pool = self.cidr_setting("fabric_pool")
        extra = self.extra_vars()
        nodes = self.nodes(mgmt_if)
        context = self.context(shape)
        self.fail_if_bad()

        switch_ports = self.switch_ports(shape)
        cables = self.cables(shape, nodes, switch_ports)
        self.fail_if_bad()
        self.address(shape, nodes, cables, pool, mgmt_net)
        self.fail_if_bad()
        return Cluster(shape, nodes, cables, ssh_user, gid, mtu, str(pool) if pool else None,
                       str(mgmt_net) if mgmt_net else None, context, extra)

    def shape(self):
        name = self.site.get("shape")
        if name is None:
            self.bad("shape", "is missing.", "add shape: one of %s." % ", ".join(SHAPES))
            return None
        if not isinstance(name, str) or name not in SHAPES:
            self.bad("shape", "%r is not a known shape." % (name,), "use one of %s." % ", ".join(SHAPES))
            return None
        return SHAPES[name]

    def optional_str(self, key, default, pattern, what):
        value = self.site.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.fullmatch(value):
            self.bad(key, "%r is not %s." % (value, what), "set %s to %s." % (key, what))
            return default
        return value

    def int_setting(self, key, default, low, high):
        value = self.site.get(key, default)
        if not _is_int(value) or not low <= value <= high:
            self.bad(key, "%r is not a whole number from %d to %d." % (value, low, high),
                     "write %s: %d (no quotes)." % (key, default))
            return default
        return value

    def gid_index(self):
        value = self.site.get("gid_index", DEFAULT_GID_INDEX)
        if value == "auto" or (_is_int(value) and 0 <= value <= 255):
            return value
        self.bad("gid_index", "%r is neither a GID slot (0-255) nor 'auto'." % (value,),
                 "write gid_index: 3 (the IPv4 RoCE v2 slot on DGX OS) or gid_index: auto.")
        return DEFAULT_GID_INDEX

    def cidr_setting(self, key):
        value = self.site.get(key)
        if value is None:
            return None
        try:
            if not isinstance(value, str) or "/" not in value:
                raise ValueError(value)
            net = netaddr.IPNetwork(value)
            if net.version != 4:
                raise ValueError(value)
        except (ValueError, netaddr.AddrFormatError):
            self.bad(key, "%r is not an IPv4 CIDR." % (value,), "write it as network/prefix, e.g. 10.60.0.0/16.")
            return None
        if net.ip != net.network:
            self.bad(key, "%s has host bits set." % value, "use the network address %s." % net.cidr)
            return None
        return net

    def extra_vars(self):
        value = self.site.get("vars", {})
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.bad("vars", "must be a mapping of variable names to values.", "write vars: {name: value}.")
            return {}
        for key in value:
            if not isinstance(key, str) or not _VAR_RE.fullmatch(key):
                self.bad("vars.%s" % key, "is not a valid variable name.", "use letters, digits and underscores.")
        return dict(value)

    def context(self, shape):
        value = self.site.get("context")
        if shape is None:
            return None
        if value is None:
            return shape.context
        if not _is_int(value) or value < 4096:
            self.bad("context", "%r is not a token count of at least 4096." % (value,),
                     "write context: %d (no quotes) or leave it out." % shape.context)
            return shape.context
        if value > shape.context:
            if shape.page_size == 4096:
                fix = ("use at most %d here, or the 64 KiB shape %s with its kernel and memory saver."
                       % (shape.context, shape.name[:-3]))
                msg = "%d tokens needs the 64 KiB kernel; %s runs on stock 4 KiB pages and holds %d." % (
                    value, shape.name, shape.context)
            else:
                fix = "use at most %d." % shape.context
                msg = "%d is more than %s holds (%d)." % (value, shape.name, shape.context)
            self.bad("context", msg, fix)
            return shape.context
        return value

    # -- nodes ---------------------------------------------------------------------------------------

    def nodes(self, default_if):
        raw = self.site.get("nodes")
        if not isinstance(raw, list) or not raw:
            self.bad("nodes", "must be a list of nodes in rank order.",
                     "add nodes: [{name: dgx1, address: 192.168.1.11}, ...].")
            return []
        ranks_given = [isinstance(n, dict) and "rank" in n for n in raw]
        if any(ranks_given) and not all(ranks_given):
            self.bad("nodes", "some nodes give a rank and some do not.",
                     "give every node a rank, or none (list order is then the rank).")
        nodes = []
        seen_names, seen_lower, seen_addrs, seen_ranks = {}, {}, {}, {}
        for i, item in enumerate(raw):
            where = "nodes[%d]" % i
            if not isinstance(item, dict):
                self.bad(where, "must be a mapping with name and address.",
                         "write {name: dgx%d, address: ...}." % (i + 1))
                continue
            for key in item:
                if key not in NODE_KEYS:
                    self.bad("%s.%s" % (where, key), "is not a node setting.", "use: %s." % ", ".join(NODE_KEYS))
            name = item.get("name")
            if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
                self.bad(where + ".name", "%r is not a valid host name." % (name,),
                         "use letters, digits and '-', e.g. dgx%d." % (i + 1))
                name = None
            elif skeleton(name) in seen_lower:  # DGX1 and dgx1 are one host; dgx1 and dgxl are read as one
                other = seen_lower[skeleton(name)]
                same = name.lower() == raw[other]["name"].lower()
                self.bad(where + ".name", "%s is also nodes[%d] (%s)." % (
                    name, other, "host names ignore case" if same else "%s only looks like %s: 1 and l, 0 and o, "
                    "rn and m read alike" % (name, raw[other]["name"])), "give every node a distinct name.")
            else:
                seen_names[name] = i
                seen_lower[skeleton(name)] = i
            addr = item.get("address")
            try:
                if not isinstance(addr, str):
                    raise ValueError(addr)
                ip = netaddr.IPAddress(addr, flags=netaddr.INET_PTON)
                if ip.version != 4:
                    raise ValueError(addr)
                addr = str(ip)
            except (ValueError, netaddr.AddrFormatError):
                self.bad(where + ".address", "%r is not an IPv4 address." % (addr,),
                         "give the node's management IPv4 address, e.g. 192.168.1.%d." % (11 + i))
                addr = None
            if addr is not None and _not_unicast(ip):
                self.bad(where + ".address", "%s is %s, not a host's unicast address." % (addr, _not_unicast(ip)),
                         "give the node's management IPv4 address, e.g. 192.168.1.%d." % (11 + i))
                addr = None
            if addr is not None:
                if addr in seen_addrs:
                    self.bad(where + ".address", "%s is also the address of nodes[%d]." % (addr, seen_addrs[addr]),
                             "give every node its own management address.")
                seen_addrs.setdefault(addr, i)
            rank = i
            if "rank" in item:
                rank = item["rank"]
                if not _is_int(rank) or not 0 <= rank < len(raw):
                    self.bad(where + ".rank", "%r is not a rank from 0 to %d." % (rank, len(raw) - 1),
                             "number the ranks 0..%d, head first." % (len(raw) - 1))
                    rank = i
                elif rank in seen_ranks:
                    self.bad(where + ".rank", "rank %d is also nodes[%d]'s." % (rank, seen_ranks[rank]),
                             "give every node a distinct rank.")
                seen_ranks.setdefault(rank, i)
            mif = item.get("management_interface", default_if)
            if not isinstance(mif, str) or not _IFNAME_RE.fullmatch(mif):
                self.bad(where + ".management_interface", "%r is not an interface name." % (mif,),
                         "use the node's management netdev, e.g. enP7s7.")
            nodes.append((Node(name or "?", rank, addr or "?", mif), item.get("cables")))
        nodes.sort(key=lambda pair: pair[0].rank)
        self._overrides = {n.name: (c, i) for i, (n, c) in enumerate(nodes)}
        self._raw_index = {n.name: seen_names.get(n.name, 0) for n, _ in nodes}
        return [n for n, _ in nodes]

    # -- cables --------------------------------------------------------------------------------------

    def switch_ports(self, shape):
        value = self.site.get("switch_ports")
        if value is None:
            return list(DEFAULT_SWITCH_PORTS)
        if shape.fabric != "switched":
            self.bad("switch_ports", "only applies to switched shapes, not %s." % shape.name,
                     "remove switch_ports, or use per-node cables overrides on a switchless shape.")
            return []
        if (not isinstance(value, list) or not value or len(set(map(repr, value))) != len(value)
                or not all(_is_int(p) and p in PORTS for p in value)):
            self.bad("switch_ports", "%r is not a list of distinct ConnectX-7 ports (0, 1)." % (value,),
                     "write switch_ports: [0] or [0, 1].")
            return list(DEFAULT_SWITCH_PORTS)
        return sorted(value)

    def cables(self, shape, nodes, switch_ports):
        if len(nodes) != shape.nodes:
            self.bad("nodes", "%s needs exactly %d nodes; the site lists %d." % (shape.name, shape.nodes, len(nodes)),
                     "list %d nodes, or pick the shape for %d nodes (%s)." % (
                         shape.nodes, len(nodes), ", ".join(s for s, v in SHAPES.items() if v.nodes == len(nodes))
                         or "none: 3 to 8 nodes are supported"))
            return []
        if shape.fabric == "switched":
            for name, (override, _) in self._overrides.items():
                if override is not None:
                    self.bad("nodes[%d].cables" % self._raw_index[name],
                             "cable overrides do not apply to %s." % shape.name,
                             "remove them; a switched shape cables switch_ports of every node to the switch.")
            return [Cable(End(n.name, p), None) for p in switch_ports for n in nodes]
        return self.switchless_cables(shape, nodes)

    def switchless_cables(self, shape, nodes):
        n = len(nodes)
        names = [node.name for node in nodes]
        # Default: port 0 of each rank to port 1 of the next rank (a ring; with three nodes, a triangle).
        peer = {}
        for i in range(n):
            peer[(names[i], 0)] = (names[(i + 1) % n], 1)
            peer[(names[i], 1)] = (names[(i - 1) % n], 0)
        overridden = set()
        for name, (override, _) in self._overrides.items():
            if override is None:
                continue
            where = "nodes[%d].cables" % self._raw_index[name]
            if not isinstance(override, dict):
                self.bad(where, "must map a port (0 or 1) to 'peer:port'.", "write cables: {0: dgx2:1}.")
                continue
            used = {}
            for port, target in override.items():
                fld = "%s.%s" % (where, port)
                if not _is_int(port) or port not in PORTS:
                    self.bad(fld, "%r is not a ConnectX-7 port." % (port,), "use port 0 or 1.")
                    continue
                parsed = self.parse_end(target, names)
                if parsed is None:
                    self.bad(fld, "%r is not 'node:port' naming a node of this site." % (target,),
                             "write it as e.g. %s:1." % names[(names.index(name) + 1) % n])
                    continue
                if parsed[0] == name:
                    self.bad(fld, "cables %s to itself." % name, "name the peer node at the other end.")
                    continue
                if parsed in used:
                    self.bad(fld, "%s:%d is also the peer of port %d." % (parsed[0], parsed[1], used[parsed]),
                             "each peer port takes one cable; fix the port numbers.")
                    continue
                used[parsed] = port
                peer[(name, port)] = parsed
                overridden.add((name, port))
        if self.problems:
            return []
        # Reciprocity: every port's peer points back at it.
        for (name, port), (other, oport) in sorted(peer.items()):
            back = peer.get((other, oport))
            if back != (name, port) and ((name, port) in overridden or (other, oport) in overridden):
                fld = "nodes[%d].cables.%d" % (self._raw_index[name], port)
                back_text = "%s:%d" % back if back else "nothing"
                self.bad(fld, "%s port %d -> %s:%d, but %s port %d -> %s: the cable is not reciprocal." % (
                    name, port, other, oport, other, oport, back_text),
                    "add cables: {%d: %s:%d} to %s as well." % (oport, name, port, other))
        if self.problems:
            return []
        cables = []
        seen = set()
        for (name, port), (other, oport) in sorted(peer.items(), key=lambda kv: (names.index(kv[0][0]), kv[0][1])):
            key = frozenset([(name, port), (other, oport)])
            if key in seen:
                continue
            seen.add(key)
            a, b = sorted([End(name, port), End(other, oport)], key=lambda e: (names.index(e.node), e.port))
            cables.append(Cable(a, b))
        self.check_cable_order(shape, nodes, cables)
        return cables

    def parse_end(self, target, names):
        if isinstance(target, dict):
            node, port = target.get("peer"), target.get("port")
        elif isinstance(target, str) and target.count(":") == 1:
            node, port = target.split(":")
            port = int(port) if port.isdigit() else None
        else:
            return None
        if node not in names or not _is_int(port) or port not in PORTS:
            return None
        return (node, port)

    def check_cable_order(self, shape, nodes, cables):
        n = len(nodes)
        rank = {node.name: node.rank for node in nodes}
        pairs = {}
        for c in cables:
            pair = tuple(sorted((rank[c.a.node], rank[c.b.node])))
            pairs[pair] = pairs.get(pair, 0) + 1
        if shape.fabric == "triangle":
            expected = {(0, 1), (1, 2), (0, 2)}
        else:
            expected = {tuple(sorted((i, (i + 1) % n))) for i in range(n)}
        for pair in sorted(set(pairs) - expected):
            a, b = nodes[pair[0]].name, nodes[pair[1]].name
            self.bad("nodes", "%s (rank %d) and %s (rank %d) are cabled, but on %s ranks two apart have no cable." % (
                a, pair[0], b, pair[1], shape.name),
                "list the nodes in cable order (each node's neighbours at rank +-1), or fix the cable overrides.")
        for pair in sorted(expected - set(pairs)):
            a, b = nodes[pair[0]].name, nodes[pair[1]].name
            self.bad("nodes", "%s needs a cable between %s (rank %d) and %s (rank %d); there is none." % (
                shape.name, a, pair[0], b, pair[1]),
                "cable them, or reorder the nodes so that neighbours in the list are cabled.")

    # -- addresses -----------------------------------------------------------------------------------

    def address(self, shape, nodes, cables, pool, mgmt_net):
        number = {node.name: node.number for node in nodes}
        subnets = []  # (cable, pcie, index, network)
        if shape.fabric == "switched":
            rails = {}
            for c in cables:
                for pcie in PCIE_PATHS:
                    rails.setdefault((c.a.port, pcie), []).append(c)
            keys = sorted(rails)
            for k, (port, pcie) in enumerate(keys):
                index = port * 2 + pcie
                net = self.carve(pool, k, len(keys)) if pool else netaddr.IPNetwork("10.100.%d.0/24" % index)
                if net is None:
                    return
                addresses = {c.a.node: str(net.network + number[c.a.node]) for c in rails[(port, pcie)]}
                path = Path(index, pcie, str(net.cidr), addresses)
                for c in rails[(port, pcie)]:
                    c.paths.append(path)
                subnets.append(net)
        else:
            count = len(cables) * len(PCIE_PATHS)
            per_pair = {}
            k = 0
            for c in sorted(cables, key=lambda c: (number[c.a.node], number[c.b.node], c.a.port)):
                lo, hi = sorted((number[c.a.node], number[c.b.node]))
                nth = per_pair.get((lo, hi), 0)
                per_pair[(lo, hi)] = nth + 1
                for pcie in PCIE_PATHS:
                    index = nth * 2 + pcie
                    if pool:
                        net = self.carve(pool, k, count)
                        if net is None:
                            return
                    else:
                        net = netaddr.IPNetwork("10.%d%d.%d.0/24" % (lo, hi, index))
                    k += 1
                    c.paths.append(Path(index, pcie, str(net.cidr), {
                        c.a.node: str(net.network + number[c.a.node]),
                        c.b.node: str(net.network + number[c.b.node]),
                    }))
                    subnets.append(net)
        fabric = pool if pool else None
        mgmt_addrs = [(n, netaddr.IPAddress(n.address)) for n in nodes]
        for node, ip in mgmt_addrs:
            for net in subnets:
                if ip in net:
                    self.bad("nodes[%d].address" % self._raw_index[node.name],
                             "%s lies inside the fabric subnet %s." % (ip, net.cidr),
                             "move the fabric with fabric_pool: <a /16 away from the management network>.")
        if mgmt_net is not None:
            for net in ([fabric] if fabric else subnets):
                if net.first <= mgmt_net.last and mgmt_net.first <= net.last:
                    self.bad("fabric_pool" if fabric else "management_network",
                             "the fabric %s overlaps the management network %s." % (net.cidr, mgmt_net.cidr),
                             "choose a fabric_pool outside %s, e.g. 10.60.0.0/16." % mgmt_net.cidr)
                    break
            for node, ip in mgmt_addrs:
                if ip not in mgmt_net:
                    self.bad("nodes[%d].address" % self._raw_index[node.name],
                             "%s is outside management_network %s." % (ip, mgmt_net.cidr),
                             "correct the address or the management_network.")
                elif mgmt_net.prefixlen <= 30 and ip in (mgmt_net.network, mgmt_net.broadcast):
                    self.bad("nodes[%d].address" % self._raw_index[node.name],
                             "%s is the %s address of management_network %s, not a host address." % (
                                 ip, "network" if ip == mgmt_net.network else "broadcast", mgmt_net.cidr),
                             "give the node's own address, from %s to %s." % (
                                 mgmt_net.network + 1, mgmt_net.broadcast - 1))

    def carve(self, pool, k, count):
        if pool.prefixlen > 24:
            self.bad("fabric_pool", "%s is smaller than one /24." % pool.cidr,
                     "use a pool of /24 or larger; this site needs %d /24s." % count)
            return None
        available = 2 ** (24 - pool.prefixlen)
        if count > available:
            self.bad("fabric_pool", "%s holds %d /24s; this site needs %d (one per path)." % (
                pool.cidr, available, count),
                     "use a pool of at least /%d." % (24 - (count - 1).bit_length()))
            return None
        return netaddr.IPNetwork("%s/24" % (pool.network + k * 256))


def build(site, source=None):
    """Validate a site dict and return its ``Cluster``; raise ``TopologyError`` naming every problem."""
    return _Builder(site, source).build()


def shape_names():
    return list(SHAPES)
