"""The doctor's view from the controller: every port a node listens on, tried for real on loopback listeners."""

import socket

from ansible_collections.dgxspark.ds41f.plugins.module_utils import exposure

SS = """LISTEN 0      4096         0.0.0.0:22        0.0.0.0:*
LISTEN 0      511        127.0.0.1:18000      0.0.0.0:*
LISTEN 0      511     172.30.77.11:8000       0.0.0.0:*
LISTEN 0      128                *:40123            *:*
LISTEN 0      128        [::1]:631             [::]:*
LISTEN 0      128   [fe80::1%eth0]:5353          [::]:*
"""


def test_listeners_beyond_loopback_are_the_cases():
    assert exposure.listeners(SS) == [("*", 40123), ("0.0.0.0", 22), ("172.30.77.11", 8000), ("fe80::1", 5353)]


def test_a_port_that_accepts_and_is_not_ssh_or_the_api_is_a_row_caused_by_the_firewall_table():
    open_sock, closed_port = socket.socket(), None
    open_sock.bind(("127.0.0.1", 0))
    open_sock.listen()
    port = open_sock.getsockname()[1]
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    closed_port = probe.getsockname()[1]
    probe.close()  # bound, then closed: nothing listens there
    try:
        opened = exposure.probe({"dgx2": ("127.0.0.1", [port, closed_port])})
    finally:
        open_sock.close()
    assert opened == {("dgx2", port): True, ("dgx2", closed_port): False}
    rows = exposure.findings(opened, {"dgx2": {22}}, ("nft_table", "inet ds41f"))
    assert [(r["node"], r["object"], r["cause"]) for r in rows] == [
        ("dgx2", {"kind": "port", "name": "tcp/%d" % port}, {"kind": "nft_table", "name": "inet ds41f"})]
    assert exposure.findings(opened, {"dgx2": {22, port}}, ("nft_table", "inet ds41f")) == []
