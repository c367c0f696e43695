# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The fabric check as a table: one row per thing checked, and a message that names the broken end.

Rows (plain dicts): node, netdev, check (link | cable | path | gid | speed), peer, expected, found, status
(ok | fail | warn | skipped), message; a failing link row adds its ``aspect`` (``link_fault``). The ``*_row``
functions build a node's rows from its own readings (live link state, LLDP neighbours, ping results, GID table,
speed); ``merge`` and ``causes`` run on the controller over every node's rows and add what only the other end knows
(a failing path whose far end has MTU 1500 says so).
"""

from __future__ import annotations

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import obj
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import PCIE_PATHS, PORTS, port_netdev

_SENT_RE = re.compile(r"(\d+) packets transmitted, (\d+) received")
_RTT_RE = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
COLUMNS = ("node", "netdev", "check", "peer", "expected", "found", "status", "message")


def ping_argv(netdev, address, mtu, count, timeout):
    """Unfragmentable frames of exactly the fabric MTU (payload = MTU - 20 IP - 8 ICMP), out of one netdev."""
    return ["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", str(timeout), "-M", "do",
            "-s", str(mtu - 28), "-I", netdev, address]


def parse_ping(rc, out, err):
    """{sent, received, loss_pct, rtt_avg_ms, error, ok} from one ``ping -q`` run."""
    sent = received = 0
    match = _SENT_RE.search(out or "")
    if match:
        sent, received = int(match.group(1)), int(match.group(2))
    rtt = _RTT_RE.search(out or "")
    # The first real error; "Warning: source address might be selected..." only says the address is missing.
    lines = [line.strip().replace("ping: ", "", 1) for line in (err or "").splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("Warning:")] or lines
    error = errors[0] if errors else None
    return {
        "sent": sent,
        "received": received,
        "loss_pct": round(100.0 * (sent - received) / sent, 1) if sent else 100.0,
        "rtt_avg_ms": float(rtt.group(2)) if rtt else None,
        "error": error,
        "ok": rc == 0 and received > 0 and received == sent,
    }


def port_of(netdev):
    """(port, pcie path) of a CX7 netdev name, or None for any other name."""
    for port in PORTS:
        for pcie in PCIE_PATHS:
            if port_netdev(port, pcie) == netdev:
                return port, pcie
    return None


# What a cable check finds when its far end sends no LLDP frame.
NO_NEIGHBOUR = "no LLDP neighbour"
# The far end's LLDP daemon, as the fabric stage names the unit it keeps (unit_policy's row object): a cable that hears
# nothing names it as its cause, and folds into its row, or into the far node's own row when that node did not answer.
LLDP_UNIT = "lldpd"


def _row(node, netdev, check, peer, expected, found, status, message, cause=None):
    """``cause``: for a consequence, the object whose own row explains it (``converge.obj``)."""
    out = dict(zip(COLUMNS, (node, netdev, check, peer, expected, found, status, message), strict=True))
    if cause:
        out["cause"] = cause
    return out


def link_fault(node, netdev, state, link, mtu):
    """(aspect, message): the local reason a netdev cannot carry its path and the part of the link it is in
    (``converge``'s aspects: link, mtu, address, carrier), or (None, None). ``state``: live readings of the netdev."""
    if state is None:
        return "link", "%s has no netdev %s" % (node, netdev)
    if not state["up"]:
        return "link", "%s %s is administratively down" % (node, netdev)
    if state["mtu"] != mtu:
        return "mtu", "%s %s MTU %d (expected %d)" % (node, netdev, state["mtu"], mtu)
    want = "%s/%d" % (link["address"], link["prefix"])
    if want not in state["addresses"]:
        return "address", "%s %s lacks %s (has %s)" % (node, netdev, want, ", ".join(state["addresses"]) or "no IPv4")
    if not state["carrier"]:
        return "carrier", "%s %s: no carrier (cable unplugged, or the other end is down)" % (node, netdev)
    return None, None


def link_problem(node, netdev, state, link, mtu):
    """The local reason a netdev cannot carry its path, or None (``link_fault``'s message)."""
    return link_fault(node, netdev, state, link, mtu)[1]


def link_row(node, link, state, mtu):
    netdev = link["netdev"]
    expected = "up, carrier, mtu %d, %s/%d" % (mtu, link["address"], link["prefix"])
    if state is None:
        found = "absent"
    else:
        found = "%s, %s, mtu %d, %s" % ("up" if state["up"] else "down",
                                        "carrier" if state["carrier"] else "no carrier", state["mtu"],
                                        ", ".join(state["addresses"]) or "no IPv4")
    aspect, problem = link_fault(node, netdev, state, link, mtu)
    row = _row(node, netdev, "link", link.get("peer"), expected, found, "fail" if problem else "ok", problem or "ok")
    return dict(row, aspect=aspect) if aspect else row


def cable_row(node, link, neighbour, lldp_running):
    """What LLDP says is on the other end of a switchless path, against the site's cabling."""
    netdev = link["netdev"]
    expected = "%s %s" % (link["peer"], link["peer_netdev"])
    if neighbour is None:
        if not lldp_running:
            return _row(node, netdev, "cable", link["peer"], expected, "unknown", "skipped",
                        "LLDP is not running on %s, so the far end is unknown" % node)
        return _row(node, netdev, "cable", link["peer"], expected, NO_NEIGHBOUR, "warn",
                    "%s %s hears no LLDP neighbour (no carrier, or lldpd is not running on the far end)" % (
                        node, netdev), cause=obj("unit", LLDP_UNIT, link["peer"]))
    found = "%s %s" % (neighbour.get("name") or neighbour.get("mac") or "?", neighbour.get("port") or "?")
    if found == expected:
        return _row(node, netdev, "cable", link["peer"], expected, found, "ok", "ok")
    port = link["port"]
    if neighbour.get("name") == link["peer"]:
        why = "port %d of %s is cabled to the wrong port of %s" % (port, node, link["peer"])
    else:
        why = "port %d of %s is cabled to the wrong node" % (port, node)
    message = "%s %s reaches %s (expected %s): %s" % (node, netdev, found, expected, why)
    return _row(node, netdev, "cable", link["peer"], expected, found, "fail", message)


def stray_problem(node, stray):
    """A stray (``fabric_strays``) on this end, as the reason a path fails."""
    return "%s %s %s (%s) takes the path; the site derives no such %s" % (
        node, stray["kind"], stray["name"], stray["found"], stray["kind"])


def path_row(node, link, peer, result, mtu, local_problem, cable_problem, stray=None):
    """One peer of one path (``result`` from parse_ping); a local or cable problem explains a failure first, then a
    stray on this end that takes the path (its object is the row's cause). A failure no end here explains names the
    far end's link as its cause."""
    expected = "%d-byte replies from %s %s" % (mtu, peer["name"], peer["address"])
    cause = None
    if result["ok"]:
        rtt = " avg %.3f ms" % result["rtt_avg_ms"] if result["rtt_avg_ms"] is not None else ""
        found, status, message = "%d/%d replies,%s" % (result["received"], result["sent"], rtt), "ok", "ok"
    else:
        found = "%d/%d replies (%.0f%% loss)" % (result["received"], result["sent"], result["loss_pct"])
        if result["error"]:
            found += ": " + result["error"]
        if result["received"]:  # the path works but drops frames: flaky or congested, not broken
            status = "warn"
            message = "%s %s loses %.0f%% of %d-byte frames to %s" % (node, link["netdev"], result["loss_pct"],
                                                                    mtu, peer["name"])
        else:
            status = "fail"
            if stray and not local_problem:
                cause = obj(stray["kind"], stray["name"])
            elif not (local_problem or cable_problem):
                cause = obj("link", peer["netdev"], peer["name"])
            message = local_problem or (stray_problem(node, stray) if stray else None) or cable_problem or \
                "no %d-byte reply from %s %s over %s %s" % (mtu, peer["name"], peer["address"], node, link["netdev"])
    return dict(_row(node, link["netdev"], "path", peer["name"], expected, found, status, message, cause),
                loss_pct=result["loss_pct"], rtt_ms=result["rtt_avg_ms"], peer_netdev=peer["netdev"])


def gid_row(node, link, table, policy):
    """The path's IPv4 must be a RoCE v2 GID, at the site's slot (or any slot with gid_index auto)."""
    hca = link["hca"]
    address = link["address"]
    want = "RoCE v2 ::ffff:%s at %s" % (address, "any index" if policy == "auto" else "index %d" % policy)
    hits = [e for e in table if e["ipv4"] == address and e["type"] == "RoCE v2"]
    if not hits:
        return _row(node, link["netdev"], "gid", None, want, "no RoCE v2 GID for %s" % address, "fail",
                    "%s %s has no RoCE v2 GID for %s: the address is missing on %s, or the HCA is not bound to "
                    "it. Fix: run the fabric stage, then check `ip addr show %s`." % (
                        node, hca, address, link["netdev"], link["netdev"]))
    found_index = hits[0]["index"]
    found = "RoCE v2 ::ffff:%s at index %d" % (address, found_index)
    if policy == "auto" or found_index == policy:
        return dict(_row(node, link["netdev"], "gid", None, want, found, "ok", "ok"), gid_index=found_index)
    message = ("%s %s: %s sits at GID index %d, not %s. A GID moves when the link flaps while RDMA still holds "
               "the old entry. Fix: when nothing uses RDMA on %s, bounce the link (`ip link set %s down && ip "
               "link set %s up`, or `nmcli device reapply %s`) and check again; or set gid_index: auto in the "
               "site file." % (node, hca, address, found_index, policy, node, link["netdev"], link["netdev"],
                               link["netdev"]))
    return dict(_row(node, link["netdev"], "gid", None, want, found, "fail", message), gid_index=found_index)


def speed_row(node, link, speed, expected):
    want = "%d Mb/s" % expected
    if speed is None:
        return _row(node, link["netdev"], "speed", None, want, "unknown", "warn",
                    "%s %s reports no link speed (no link: see its link row)" % (node, link["netdev"]))
    found = "%d Mb/s" % speed
    if speed >= expected:
        return _row(node, link["netdev"], "speed", None, want, found, "ok", "ok")
    return _row(node, link["netdev"], "speed", None, want, found, "warn",
                "%s %s negotiated %d Mb/s, not %d: a switch port needs the speed forced to 200G with "
                "auto-negotiation off; a direct cable that is not a QSFP112 cable brings up less." % (
                    node, link["netdev"], speed, expected))


def skipped_rows(node, links, check, reason):
    return [_row(node, link["netdev"], check, None, "-", "-", "skipped", reason) for link in links]


def _end_problems(rows):
    """{(node, netdev): message} of failing link and cable rows, and of paths a stray at their own end takes (a cause
    without a node is on the row's own node): what is wrong at one end of a path."""
    out = {}
    for row in rows:
        stray = row["check"] == "path" and row.get("cause") and "node" not in row["cause"]
        if (row["check"] in ("link", "cable") or stray) and row["status"] == "fail":
            out.setdefault((row["node"], row["netdev"]), row["message"])
    return out


def merge(rows):
    """Rows of every node; a failing path with no reason at its own end gets what its far end reported."""
    ends = _end_problems(rows)
    out = []
    for row in rows:
        if row["check"] == "path" and row["status"] == "fail" and (row["node"], row["netdev"]) not in ends:
            far = ends.get((row["peer"], row.get("peer_netdev")))
            if far:
                row = dict(row, message="%s; far end: %s" % (row["message"], far))
        out.append(row)
    return out


def causes(rows):
    """The distinct reasons behind the failing rows: each broken end once, then paths failing for no
    reason either end can see."""
    ends = _end_problems(rows)
    found = sorted(set(ends.values()))
    found += sorted({row["message"] for row in rows if row["status"] == "fail" and row["check"] not in ("link", "cable")
                     and not (row["check"] == "path" and ((row["node"], row["netdev"]) in ends
                                                          or (row["peer"], row.get("peer_netdev")) in ends))})
    return found


# The parts of a link the fabric stage sets (fabric_links): a row about one of them is mended by `ds41f run fabric`;
# any other finding (a cable, the GID slot, the speed) says in its message what a person must do.
STAGE_MENDS = ("link", "mtu", "address")


def drift(rows, cidrs=None):
    """Failing rows as drift entries (setting, expected, found, fix) for the doctor's drift table, with what it folds
    them by as data: a path row's failed pings are aspect ``reachability`` with the cause object of a consequence;
    every other row is about its link (object kind ``link``), its aspect the part that failed (a link row's, as
    ``link_fault`` names it) or its check. ``cidrs``: {netdev: the path's CIDR}, each entry's ``path``."""
    out = []
    for r in rows:
        if r["status"] in ("fail", "warn"):
            entry = {"setting": "%s %s %s%s" % (r["node"], r["netdev"], r["check"], " -> " + r["peer"] if r["peer"]
                                                else ""), "expected": r["expected"], "found": r["found"],
                     "fix": r["message"]}
            if r["check"] == "path":
                entry["aspect"] = "reachability"
            else:
                entry.update(object=obj("link", r["netdev"]), aspect=r.get("aspect") or r["check"])
                if entry["aspect"] in STAGE_MENDS:  # the fix is the stage's run, which sets that part of the link
                    entry["fix"] = None
            if (cidrs or {}).get(r["netdev"]):
                entry["path"] = cidrs[r["netdev"]]
            if r.get("cause"):
                entry["cause"] = r["cause"]
            out.append(entry)
    return out


def text(rows):
    """The play output: a count line, a fixed-width table of the rows that are not ok, and one line per
    reason rows were skipped."""
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    lines = ["%d checks: %s" % (len(rows), ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))]
    shown = [r for r in rows if r["status"] in ("fail", "warn")]
    if shown:
        cols = ("node", "netdev", "check", "peer", "status", "found")
        cells = [[str(r.get(c) if r.get(c) is not None else "-") for c in cols] for r in shown]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)) + "  message")
        for row, cell in zip(shown, cells, strict=True):
            lines.append("  ".join(v.ljust(w) for v, w in zip(cell, widths, strict=True)) + "  " + row["message"])
    skipped = {}
    for row in rows:
        if row["status"] == "skipped":
            skipped.setdefault(row["message"], set()).add(row["node"])
    for message, nodes in sorted(skipped.items()):
        lines.append("skipped on %s: %s" % (", ".join(sorted(nodes)), message))
    return lines
