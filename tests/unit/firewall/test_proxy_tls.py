"""The API proxy with the site's certificate: real nginx (the distribution's, unpacked by ``make proxy-nginx``) with
the serve stage's config and a certificate made in the test's own folder, the engine's place held by a loopback
stub that counts what reaches it. The site's address is 127.0.0.2 (loopback: nothing leaves the machine); the
``0.0.0.0`` case runs in a network namespace of its own."""

import asyncio
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import proxy
from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls
from ds41f.bench import client
from tests.conftest import ROOT
from tests.unit import certificates as certs

from .test_proxy_routes import KEY, NGINX, Anything, proxied

pytestmark = pytest.mark.lab_engine

SITE = "127.0.0.2"


class Counted(Anything):
    """The engine's place: 200 to anything, and a count of the requests that got through."""

    hits = []

    def answer(self):
        self.hits.append(self.path)
        super().answer()

    do_GET = do_POST = answer


def write_pair(folder, **options):
    cert, key, _ = certs.pair(folder, **options)
    os.replace(cert, folder / proxy.TLS_CERTIFICATE)
    os.replace(key, folder / proxy.TLS_KEY)
    return folder / proxy.TLS_CERTIFICATE


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("proxy-tls")
    cert = write_pair(folder, ips=(SITE,))
    tls_files = (str(folder / proxy.TLS_CERTIFICATE), str(folder / proxy.TLS_KEY))
    with proxied(folder, [SITE], tls_files, Counted) as (port, server):
        yield {"port": port, "cert": cert, "folder": folder, "server": server}


def status(url, key=None, context=None):
    headers = {"Authorization": "Bearer " + key} if key else {}
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10,
                                      context=context).status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_https_with_the_key_answers_and_without_it_401(served):
    site = tls.client_context(str(served["cert"]))  # the site's certificate as the client's only CA
    url = "https://%s:%d" % (SITE, served["port"])
    before = len(Counted.hits)
    assert status(url + "/v1/models", KEY, site) == 200
    assert status(url + "/v1/models", None, site) == 401
    assert status(url + "/invocations", "wrong" + KEY, site) == 401
    assert status(url + "/health", None, site) == 200
    assert Counted.hits[before:] == ["/v1/models", "/health"]


def test_plain_http_on_the_tls_listener_is_refused_and_reaches_nothing(served):
    before = len(Counted.hits)
    for key in (KEY, None):
        request = urllib.request.Request("http://%s:%d/v1/models" % (SITE, served["port"]),
                                         headers={"Authorization": "Bearer " + key} if key else {})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400 and b"plain HTTP request was sent to HTTPS port" in refused.value.read()
    assert Counted.hits[before:] == []


def test_loopback_stays_plain_http_for_the_heads_own_probes(served):
    url = "http://127.0.0.1:%d" % served["port"]
    assert status(url + "/v1/models", KEY) == 200 and status(url + "/v1/models") == 401
    with pytest.raises(urllib.error.URLError, match="(?i)ssl|wrong version"):
        urllib.request.urlopen("https://127.0.0.1:%d/health" % served["port"], timeout=10,
                               context=tls.client_context(str(served["cert"])))


def handshake(port, context, name=SITE):
    with context.wrap_socket(socket.create_connection((SITE, port), 10), server_hostname=name):
        return True


def test_a_client_verifies_the_certificate_and_its_name_against_the_site_file_alone(served, tmp_path):
    assert handshake(served["port"], tls.client_context(str(served["cert"])))
    other, _, _ = certs.pair(tmp_path, stem="other", ips=(SITE,))
    for context, name, words in ((tls.client_context(str(other)), SITE, "certificate verify failed"),
                                 (ssl.create_default_context(), SITE, "certificate verify failed"),
                                 (tls.client_context(str(served["cert"])), "api.example.test", "match")):
        with pytest.raises(ssl.SSLCertVerificationError, match=words):
            handshake(served["port"], context, name)


def test_the_bench_client_speaks_https_trusting_the_site_certificate(served):
    url = "https://%s:%d/v1/models" % (SITE, served["port"])
    client.trust(tls.client_context(str(served["cert"])))
    try:
        assert asyncio.run(client.request(url, api_key=KEY)) == (200, b"ok")
        assert asyncio.run(client.request(url))[0] == 401
    finally:
        client.trust(None)
    with pytest.raises(ssl.SSLCertVerificationError):  # the system's CAs do not know the site's certificate
        asyncio.run(client.request(url, api_key=KEY))


def test_a_new_certificate_is_served_after_a_reload_and_the_doctor_tells_them_apart(served, tmp_path):
    """What the unit's ExecReload does (nginx -t, then HUP) after the serve stage wrote a new pair."""
    port, head_copy = served["port"], str(served["folder"] / proxy.TLS_CERTIFICATE)
    old = tmp_path / "old.crt"
    old.write_bytes(served["cert"].read_bytes())
    assert tls.findings("dgx1", SITE, port, str(old), head_copy, True) == ([], [])
    new = write_pair(served["folder"], ips=(SITE,))
    conf = str(served["folder"] / "nginx.conf")
    subprocess.run([str(NGINX), "-t", "-q", "-p", str(served["folder"]), "-c", conf], check=True, timeout=30)
    served["server"].send_signal(1)  # SIGHUP
    for _ in range(100):
        if tls.served(SITE, port, str(new)) is None:
            break
        time.sleep(0.05)
    assert tls.served(SITE, port, str(new)) is None
    rows, skipped = tls.findings("dgx1", SITE, port, str(old), head_copy, True)
    assert skipped == [] and [(r["object"], r["cause"], r["severity"]) for r in rows] == [
        ({"kind": "port", "name": "tcp/%d" % port}, {"kind": "file", "name": head_copy}, "error")]
    assert "does not verify" in rows[0]["found"] and rows[0]["fix"].startswith("ds41f run serve")


EVERY_INTERFACE = r"""
import json, pathlib, subprocess, sys
from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls
from tests.unit.firewall.test_proxy_routes import KEY, proxied
from tests.unit.firewall.test_proxy_tls import status
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
folder = pathlib.Path(sys.argv[1])
with proxied(folder, ["0.0.0.0"], (str(folder / "tls.crt"), str(folder / "tls.key"))) as (port, _):
    print(json.dumps({
        "port": port, "listening": subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout.split(),
        "loopback plain": status("http://127.0.0.1:%d/v1/models" % port, KEY),
        "site https": status("https://127.0.0.2:%d/v1/models" % port, KEY, tls.client_context(str(folder / "tls.crt"))),
        "site plain": status("http://127.0.0.2:%d/v1/models" % port, KEY)}))
"""


def test_on_every_interface_loopback_stays_plain_beside_tls(tmp_path):
    """serve_listen 0.0.0.0: one socket, and nginx tells loopback (plain) from the site's addresses (TLS) by the
    local address; run in a network namespace of its own, so nothing listens on the machine's interfaces."""
    if not NGINX.exists():
        pytest.fail("nginx is not unpacked. Fix: make proxy-nginx")
    write_pair(tmp_path, ips=(SITE,))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "collections"), str(ROOT)]))
    # A session of its own: on a time-out the whole group goes, nginx with it (it would outlive its parent).
    proc = subprocess.Popen(["unshare", "--net", sys.executable, "-c", EVERY_INTERFACE, str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    found = json.loads(out.strip().splitlines()[-1])
    assert "0.0.0.0:%d" % found["port"] in found["listening"]
    assert (found["loopback plain"], found["site https"], found["site plain"]) == (200, 200, 400)
