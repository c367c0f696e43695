"""The client's parsing of HTTP bodies, server-sent events and /metrics, fed real byte streams."""

import asyncio
import http.server
import ssl
import threading
from types import SimpleNamespace

import pytest

from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls
from ds41f.bench import client, runner
from tests.unit import certificates as certs


def feed(data):
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def collect(data, headers):
    return [c async for c in client._body_chunks(feed(data), headers)]


def test_chunked_and_sized_bodies():
    chunked = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    assert asyncio.run(collect(chunked, {"transfer-encoding": "chunked"})) == [b"hello", b" world"]
    assert b"".join(asyncio.run(collect(b"abcdef", {"content-length": "4"}))) == b"abcd"


async def head(data):
    return await client._head(feed(data))


def test_status_line_and_headers():
    status, headers = asyncio.run(head(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"))
    assert status == 200 and headers == {"content-type": "text/plain"}


def test_metrics_are_summed_over_label_sets():
    text = ('# HELP vllm:num_requests_running x\n'
            'vllm:num_requests_running{engine="0",model_name="m"} 2.0\n'
            'vllm:num_requests_running{engine="1",model_name="m"} 1.0\n'
            'vllm:request_success_total{finished_reason="length"} 7.0\n'
            'vllm:request_success_total{finished_reason="stop"} 3.0\n')
    m = client.parse_metrics(text)
    assert m["vllm:num_requests_running"] == 3.0 and m["vllm:request_success_total"] == 10.0


def test_decode_metrics_use_usage_tokens_and_the_decode_window():
    results = [
        {"t_send": 0.0, "t_first": 0.5, "t_last": 4.5, "usage": {"completion_tokens": 101}},
        {"t_send": 0.1, "t_first": 1.0, "t_last": 5.0, "usage": {"completion_tokens": 101}},
    ]
    m = runner.decode_metrics(results)
    assert m["tps"] == 202 / 5.0
    assert m["decode_window_tps"] == 200 / 4.5  # tokens after each first, from the earliest first to the last
    assert m["ttft_s"] == (0.5 + 0.9) / 2


def test_without_tokenize_prompts_are_sized_by_the_running_ratio():
    """A server that answers /tokenize with 404: asked once, then the characters-per-token ratio sizes prompts."""
    asked = []

    class NoTokenize(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the handler's protocol name
            asked.append(self.path)
            self.send_error(404)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoTokenize)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        bench = runner.Bench("http://127.0.0.1:%d" % server.server_port, "m", SimpleNamespace(api_key=None))
        first = asyncio.run(bench.prefill_prompt(1000))
        second = asyncio.run(bench.prefill_prompt(1000))
    finally:
        server.shutdown()
    assert asked == ["/tokenize"] and not bench.can_tokenize
    for messages in (first, second):
        body = messages[0]["content"].split("\n", 1)[1]
        assert len(body) == int(1000 * runner.CHARS_PER_TOKEN)


def test_top_logprobs_of_the_same_text_are_one_token_with_their_summed_probability():
    import math

    top = client._by_text([{"token": "a", "logprob": math.log(0.25)}, {"token": "", "logprob": math.log(0.125)},
                           {"token": "", "logprob": math.log(0.125)}])
    assert top["a"] == math.log(0.25) and abs(math.exp(top[""]) - 0.25) < 1e-12


def test_what_is_past_the_servers_context_is_recorded_and_never_sent():
    from ds41f.bench import admission

    options = SimpleNamespace(admission_contexts=4, admission_tokens=4096, admission_output=128)
    bench = runner.Bench("http://127.0.0.1:1", "m", options, log=lambda m: None, context=2048)  # nothing listens
    assert bench.serves("prefill/source/1024", 1024, 1)
    assert not bench.serves("prefill/source/32768", 32768, 1)
    assert bench.unmeasured == {"prefill/source/32768": "past the server's 2048-token context"}
    out = asyncio.run(admission.run(bench))
    assert out["passed"] is False and out["why"].startswith("one 4096-token context with 128 output tokens is past")
    assert bench.requests == 0


def test_https_verifies_the_server_against_the_trusted_certificate_alone(tmp_path):
    """A loopback HTTPS server with a certificate made here: trusted through the site's file, refused otherwise."""
    cert, key, _ = certs.pair(tmp_path, ips=("127.0.0.1",))

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the handler's protocol name
            self.send_response(200 if self.headers.get("Authorization") == "Bearer k" else 401)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "https://127.0.0.1:%d/v1/models" % server.server_port
    try:
        client.trust(tls.client_context(str(cert)))
        assert asyncio.run(client.request(url, api_key="k")) == (200, b"ok")
        client.trust(None)
        with pytest.raises(ssl.SSLCertVerificationError):  # the system's CAs do not know a certificate made here
            asyncio.run(client.request(url, api_key="k"))
    finally:
        client.trust(None)
        server.shutdown()
