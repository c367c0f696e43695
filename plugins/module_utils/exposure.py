# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""What a node lets the controller's machine reach: every TCP port it listens on, tried from the controller.

The node lists its listening sockets (``listeners``, from ``ss -Hltn``); the doctor, on the controller, tries to
open each port that listens beyond loopback on the node's management address, all at once with a short timeout.
SSH, and the API on the head, may accept; any other port that does is a row, caused by the node's firewall
table (the firewall stage's row, when it has one, is the one shown). The cases are what the node really
listens on, not a list someone kept.

Pure Python: the node's module parses, the controller's action probes and judges.
"""

from __future__ import annotations

import concurrent.futures
import socket

LOOPBACK = ("127.", "::1")
TIMEOUT_S = 1.5


def listeners(ss_output):
    """[(local address, port)] of ``ss -Hltn``, loopback left out (nothing beyond the node reaches it)."""
    out = set()
    for line in (ss_output or "").splitlines():
        words = line.split()
        if len(words) < 4:
            continue
        address, _, port = words[3].rpartition(":")
        address = address.strip("[]").split("%")[0]  # [::1], and an address scoped to an interface (fe80::1%eth0)
        if port.isdigit() and not address.startswith(LOOPBACK):
            out.add((address, int(port)))
    return sorted(out)


def reachable(address, port, timeout=TIMEOUT_S):
    try:
        socket.create_connection((address, port), timeout).close()
        return True
    except OSError:
        return False


def probe(targets, timeout=TIMEOUT_S):
    """{(node, port): bool} for ``targets`` {node: (address, [port, ...])}, every connection at once."""
    jobs = [(node, address, port) for node, (address, ports) in targets.items() for port in ports]
    if not jobs:
        return {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(64, len(jobs))) as pool:
        answers = pool.map(lambda job: reachable(job[1], job[2], timeout), jobs)
        return {(node, port): ok for (node, _, port), ok in zip(jobs, answers, strict=True)}


def findings(opened, allowed, table):
    """Rows for the ports that accepted the controller and may not: ``opened`` {(node, port): bool}, ``allowed``
    {node: {port, ...}}; each names the node's firewall table (``table``: its kind and name) as its cause."""
    out = []
    for (node, port), ok in sorted(opened.items()):
        if ok and port not in allowed.get(node, ()):
            out.append({"node": node, "stage": "firewall", "setting": "tcp port %d from the controller" % port,
                        "expected": "no connection (only %s)" % ", ".join(str(p) for p in sorted(allowed.get(node,
                                                                                                          ()))),
                        "found": "accepts a connection", "severity": "error",
                        "object": {"kind": "port", "name": "tcp/%d" % port},
                        "cause": {"kind": table[0], "name": table[1]},
                        "fix": "ds41f run firewall (its table accepts only SSH, and the API on the head, from "
                               "outside the cluster)"})
    return out
