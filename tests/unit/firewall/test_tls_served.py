"""The doctor's look at the API's TLS from the controller: what a loopback TLS server (Python's own, with
certificates made in the test's folder) presents, against the site's certificate file."""

import contextlib
import socket
import ssl
import threading

import pytest

from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls
from tests.unit import certificates as certs

HEAD_COPY = "/etc/ds41f/proxy/tls.crt"


@contextlib.contextmanager
def presenting(chain_file=None, key_file=None):
    """A loopback server that completes TLS handshakes with ``chain_file`` (or speaks no TLS at all without it);
    yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    context = None
    if chain_file:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain_file, key_file)
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with contextlib.suppress(OSError):
                if context:
                    with context.wrap_socket(conn, server_side=True) as tls_conn:
                        tls_conn.recv(1)
                else:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.fixture(scope="module")
def site_ca(tmp_path_factory):
    """A site CA, and two server certificates it issued: the one the site names now, and the one it replaced."""
    folder = tmp_path_factory.mktemp("site-ca")
    ca_key = certs.new_key()
    ca = certs.certificate(ca_key, name="site CA", ips=(), ca=True, days=3650)
    out = {"folder": folder}
    for name in ("now", "before"):
        key = certs.new_key()
        leaf = certs.certificate(key, ips=("127.0.0.1",), issuer=(ca, ca_key))
        (folder / ("%s.crt" % name)).write_bytes(certs.pem(leaf, ca))
        (folder / ("%s.key" % name)).write_bytes(certs.pem(key))
        out[name] = str(folder / ("%s.crt" % name)), str(folder / ("%s.key" % name))
    return out


def test_the_sites_certificate_served_is_no_row(site_ca):
    with presenting(*site_ca["now"]) as port:
        assert tls.served("127.0.0.1", port, site_ca["now"][0]) is None
        assert tls.findings("dgx1", "127.0.0.1", port, site_ca["now"][0], HEAD_COPY, True) == ([], [])


def test_another_certificate_the_site_ca_issued_is_still_a_row(site_ca):
    """The file's CA verifies both; the pin tells the certificate the head should present from the one it does
    (a renewal written but not loaded)."""
    with presenting(*site_ca["before"]) as port:
        rows, skipped = tls.findings("dgx1", "127.0.0.1", port, site_ca["now"][0], HEAD_COPY, True)
    assert skipped == [] and len(rows) == 1
    assert rows[0]["found"].startswith("another certificate (SHA-256 ")
    assert rows[0]["object"] == {"kind": "port", "name": "tcp/%d" % port}
    assert rows[0]["cause"] == {"kind": "file", "name": HEAD_COPY} and rows[0]["node"] == "dgx1"


def test_a_server_without_tls_or_without_a_listener_is_a_row(site_ca):
    with presenting() as port:
        found = tls.served("127.0.0.1", port, site_ca["now"][0])
    assert found.startswith("no TLS handshake"), found
    with presenting() as port:
        pass  # closed: nothing listens there any more
    assert tls.served("127.0.0.1", port, site_ca["now"][0]).startswith("no connection")


def test_a_port_the_controller_cannot_reach_is_not_checked_and_says_why(site_ca):
    rows, skipped = tls.findings("dgx1", "192.0.2.11", 8000, site_ca["now"][0], HEAD_COPY, False)
    assert rows == [] and skipped == [{"node": "dgx1", "check": "the API's TLS from the controller",
                                       "reason": "tcp/8000 took no connection from the controller"}]


@pytest.mark.parametrize("days, start, severity", [(-1, -30, "error"), (30, 5, "error"), (12, -1, "warn")])
def test_the_sites_certificate_out_of_date_is_a_row_about_the_heads_copy(days, start, severity, tmp_path):
    cert, _, _ = certs.pair(tmp_path, days=days, start_days=start)
    rows, skipped = tls.findings("dgx1", "192.0.2.11", 8000, str(cert), HEAD_COPY, False)
    assert [(r["severity"], r["object"]) for r in rows] == [(severity, {"kind": "file", "name": HEAD_COPY})]
    assert "ds41f run serve" in rows[0]["fix"] and len(skipped) == 1
