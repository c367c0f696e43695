# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The API's reverse proxy on the head: nginx in front of an engine that listens on loopback only.

vLLM's key covers /v1, /v2 and /inference, not /invocations, /tokenize, /metrics or its control routes (vLLM's
security guide); SGLang's leaves /health, /ready and /metrics open. The proxy asks for the key on every path, so
a route an engine adds tomorrow is keyed too: ``/health`` alone answers without it, and ``/metrics`` also from
the named scrape addresses. It listens on loopback (the head's own probes) and on the addresses the site names
(``serve_listen``); the engine listens on ``127.0.0.1:<serve_engine_port>``. With the site's certificate
(``serve_tls_certificate``), every listener but loopback speaks TLS only: loopback stays plain HTTP, so the head's
own probes (readiness, smoke, watchdog, status) need no certificate and no name to check it by.

Pure Python: the serve stage's module renders with it, the tests read it.
"""

from __future__ import annotations

import ipaddress
import string

OPEN_PATHS = ("/health",)
# The site's certificate and key in the proxy's folder (serve_tls_certificate, serve_tls_key).
TLS_CERTIFICATE, TLS_KEY = "tls.crt", "tls.key"
# Every TLS client of today speaks 1.2 or 1.3; older versions have known attacks.
TLS_PROTOCOLS = "TLSv1.2 TLSv1.3"
# A key travels inside the nginx config: only characters that need no quoting there (the generated keys are
# URL-safe base64).
KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~+/=")


class ProxyError(ValueError):
    """A value the proxy cannot hold; str() names the field and the fix."""


def key_problem(key):
    if not key:
        return "is empty"
    bad = sorted(set(key) - KEY_CHARACTERS)
    if bad:
        return "holds %d character(s) outside letters, digits and - . _ ~ + / =" % len(bad)
    return None


def _address(value, field):
    try:
        address = ipaddress.ip_address(str(value))
    except ValueError:
        raise ProxyError("%s: %r is not an IP address. Fix: name an address of the head (its management address, "
                         "one of its fabric addresses, or 0.0.0.0 for every interface)." % (field, value)) from None
    return "[%s]" % address if address.version == 6 else str(address)


def listeners(listen, port):
    """``listen`` lines: loopback always (the head's own probes), then each named address once."""
    out = ["127.0.0.1:%d" % port]
    for i, value in enumerate(listen or []):
        text = "%s:%d" % (_address(value, "serve_listen[%d]" % i), port)
        if text not in out:
            out.append(text)
    if any(x.startswith("0.0.0.0:") for x in out):
        out = ["0.0.0.0:%d" % port] + [x for x in out if x.startswith("[")]
    return out


def listen_lines(listen, port, tls=False):
    """nginx's ``listen`` parameters: ``listeners``, and with ``tls`` every one but loopback with ``ssl`` (loopback
    stays plain, also beside ``0.0.0.0``: nginx tells them apart by the local address)."""
    out = listeners(listen, port)
    if not tls:
        return out
    loopback = "127.0.0.1:%d" % port
    return [loopback] + ["%s ssl" % x for x in out if x != loopback]


def key_map(key):
    """The included file that holds the key: nginx's map from the Authorization header to 1 (the key) or 0."""
    problem = key_problem(key)
    if problem:
        raise ProxyError("serve_api_key: %s. Fix: use letters, digits and - . _ ~ + / = only, or leave it empty to "
                         "have one generated." % problem)
    # A regular expression, case-sensitive (~): nginx compares a map's plain strings without case, which would
    # accept the key in any case. The key's characters that mean something there are escaped.
    pattern = "".join("\\" + c if c in ".+" else c for c in key)
    return "map $http_authorization $ds41f_key_ok {\n\tdefault 0;\n\t\"~^Bearer %s$\" 1;\n}\n" % pattern


OPEN_KEY_MAP = "map $http_authorization $ds41f_key_ok {\n\tdefault 1;\n}\n"


def config(listen, port, engine_port, key_file, metrics_clients=(), tls=None):
    """nginx.conf for the proxy. ``key_file``: the included map (``key_map``), which holds the key; ``tls``: the
    (certificate, key) files the site's listeners serve TLS with, or None for plain HTTP."""
    scrapers = ["\t%s 1;" % ipaddress.ip_address(str(a)) for a in metrics_clients or []]
    server_listen = "".join("\t\tlisten %s;\n" % x for x in listen_lines(listen, port, bool(tls)))
    if tls:
        server_listen += "\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n\t\tssl_protocols %s;\n" % (
            tls[0], tls[1], TLS_PROTOCOLS)
    refusal = ('\t\t\tif ($ds41f_key_ok = 0) { add_header WWW-Authenticate Bearer always; return 401 '
               '\'{"error": {"message": "missing or wrong API key", "type": "unauthorized", "code": 401}}\'; }\n')
    return "".join([
        "# Written by dgxspark.ds41f (the serve stage): the API's reverse proxy. Every path asks for the key but\n",
        "# /health; /metrics also answers the scrape addresses.\n",
        "worker_processes 2;\n",
        "pid /run/ds41f-proxy.pid;\n",
        "error_log stderr warn;\n",
        "events {\n\tworker_connections 1024;\n}\n",
        "http {\n",
        "\taccess_log off;\n",
        "\tserver_tokens off;\n",
        "\tdefault_type application/json;\n",
        "\tinclude %s;\n" % key_file,
        "\tmap $remote_addr $ds41f_scraper {\n\t\tdefault 0;\n%s\t}\n" % "".join("\t" + s + "\n" for s in scrapers),
        "\tmap \"$ds41f_key_ok$ds41f_scraper\" $ds41f_metrics_ok {\n\t\t\"00\" 0;\n\t\tdefault 1;\n\t}\n",
        "\tupstream ds41f_engine {\n\t\tserver 127.0.0.1:%d;\n\t\tkeepalive 16;\n\t}\n" % engine_port,
        "\tserver {\n",
        server_listen,
        # Long prompts and streamed answers: no body limit below the engine's own, no buffering, long reads.
        "\t\tclient_max_body_size 256m;\n",
        "\t\tproxy_http_version 1.1;\n",
        "\t\tproxy_set_header Connection \"\";\n",
        "\t\tproxy_set_header Host $host;\n",
        "\t\tproxy_buffering off;\n",
        "\t\tproxy_request_buffering off;\n",
        "\t\tproxy_read_timeout 3600s;\n",
        "\t\tproxy_send_timeout 3600s;\n",
        "".join("\t\tlocation = %s {\n\t\t\tproxy_pass http://ds41f_engine;\n\t\t}\n" % p for p in OPEN_PATHS),
        "\t\tlocation = /metrics {\n",
        refusal.replace("$ds41f_key_ok", "$ds41f_metrics_ok"),
        "\t\t\tproxy_pass http://ds41f_engine;\n\t\t}\n",
        "\t\tlocation / {\n",
        refusal,
        "\t\t\tproxy_pass http://ds41f_engine;\n\t\t}\n",
        "\t}\n",
        "}\n",
    ])


def unit(conf_path, nginx="/usr/sbin/nginx"):
    return "\n".join([
        "# Written by dgxspark.ds41f (the serve stage).",
        "[Unit]",
        "Description=ds41f API proxy (nginx) in front of the engine on loopback",
        "After=network-online.target",
        "Wants=network-online.target",
        # An address the site names may come up after the unit: it retries, without a start limit.
        "StartLimitIntervalSec=0",
        "",
        "[Service]",
        "Type=simple",
        "ExecStartPre=%s -t -q -c %s" % (nginx, conf_path),
        "ExecStart=%s -c %s -g 'daemon off;'" % (nginx, conf_path),
        "ExecReload=%s -t -q -c %s" % (nginx, conf_path),
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=always",
        "RestartSec=2",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ])


# Paths every engine serves outside its OpenAPI table (mounted apps and hidden routes): vLLM's Prometheus app and
# SGLang's metrics are mounted; both hide /openapi.json itself from their table.
UNLISTED_PATHS = ("/metrics", "/openapi.json", "/docs")


def routes(openapi):
    """Every path of an engine's route table (its ``/openapi.json``), path parameters filled with a placeholder,
    plus the paths engines serve outside it: what the keyless probe asks."""
    paths = set(UNLISTED_PATHS)
    for path in (openapi or {}).get("paths") or {}:
        parts = [("x" if p.startswith("{") and p.endswith("}") else p) for p in str(path).split("/")]
        paths.add("/".join(parts))
    return sorted(paths)


def keyless_verdict(path, status):
    """None when ``status`` (a GET without the key) is what the proxy promises for ``path``, else the finding's
    found text. A GET, whatever the route's method: the proxy decides by path, and a GET that got through reaches
    the engine without changing it (a POST-only route answers 405)."""
    if path in OPEN_PATHS:
        return None
    if status in (401, 403):
        return None
    return "HTTP %s without the key" % status
