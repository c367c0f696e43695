"""An engine is judged by progress: the counters of the lab engine's real /metrics (tests/fixtures/bench-metrics/
lab-engine-vllm-0.32.0-cpu.txt, see its SOURCE.md) read before, and again with the values a case needs written
into that same text (the series, labels and format stay the engine's own). The probe runs against a loopback HTTP
server that answers or withholds the first token as a healthy or a hung engine does."""

import http.server
import re
import threading
import time

import pytest
from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_progress as ep
from tests.conftest import FIXTURES

RECORDED = (FIXTURES / "bench-metrics" / "lab-engine-vllm-0.32.0-cpu.txt").read_text()


def with_values(text=RECORDED, **values):
    """The recorded text with the sample of each named series (``running=2``) set to that value."""
    for key, value in values.items():
        name = re.escape(ep.SERIES[key][0])
        text, n = re.subn(r"^(%s\{[^}]*\}) \S+$" % name, r"\g<1> %s" % float(value), text, flags=re.M)
        assert n == 1, key
    return text


def test_the_recorded_engine_exposes_every_series_the_judge_reads():
    counters = ep.parse(RECORDED)
    assert {k: counters[k] for k in ("running", "waiting", "prompt", "generation")} == {
        "running": 0.0, "waiting": 0.0, "prompt": 1527.0, "generation": 332.0}
    assert counters["scheduled"] >= 1527.0  # every prompt token went through the engine's steps


def test_a_hung_group_is_a_stall_naming_what_runs_and_how_long_nothing_moved():
    before = ep.parse(with_values(running=2))
    verdict = ep.judge(before, ep.parse(with_values(running=2)), 20.4)
    assert verdict == {"state": "stalled", "ok": False,
                       "seen": "2 request(s) running, no prompt or generated token in 20 s"}


def test_a_queue_that_never_starts_is_a_stall_too():
    after = ep.parse(with_values(running=0, waiting=3))
    assert ep.judge(ep.parse(RECORDED), after, 20)["seen"] == (
        "1 request(s) running, 3 waiting, no prompt or generated token in 20 s")  # the probe's own


@pytest.mark.parametrize("moved, word", [
    ({"scheduled": 1_000_000}, "scheduled"),  # a chunked prefill of a long context: only the step tokens move
    ({"prompt": 1527 + 900_000}, "prompt"),  # a prefill that finished in the window, no token generated yet
    ({"generation": 340}, "generated"),  # decoding
])
def test_a_moving_prefill_or_decode_is_not_a_stall(moved, word):
    before = ep.parse(with_values(running=1))
    if "scheduled" in moved:
        moved = {"scheduled": before["scheduled"] + moved["scheduled"]}
    verdict = ep.judge(before, ep.parse(with_values(running=1, **moved)), 20)
    assert verdict["ok"] and verdict["state"] == "moving" and word in verdict["seen"]


def test_a_first_token_settles_it_and_a_refusal_is_no_stall():
    assert ep.judge(None, None, 1.0, first_token_s=0.4) == {"state": "answering", "ok": True,
                                                            "seen": "first token in 0.4 s"}
    refused = ep.judge(None, None, 0.1, refused="HTTP Error 404: Not Found")
    assert refused["state"] == "refused" and not refused["ok"]


def test_an_engine_that_hung_while_idle_reports_stale_counters_and_is_still_a_stall():
    """A hung engine stops reporting: its counters still say 0 running. The probe's own request was in flight."""
    verdict = ep.judge(ep.parse(RECORDED), ep.parse(RECORDED), 20)
    assert verdict["state"] == "stalled" and verdict["seen"] == (
        "1 request(s) running, no prompt or generated token in 20 s")
    assert ep.judge(None, None, 20)["seen"].endswith("(no token counters to read)")


class Engine(http.server.BaseHTTPRequestHandler):
    """/metrics from the recording; a chat completion that streams a token at once, or never (a hung group)."""
    hung = False
    metrics = RECORDED

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = self.metrics.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        if self.hung:
            time.sleep(4)
            return
        self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
                         b'data: {"choices":[{"index":0,"delta":{"content":"OK"}}]}\n\ndata: [DONE]\n\n')


@pytest.fixture
def engine():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_probe_reads_a_first_token_from_an_answering_engine(engine):
    engine.RequestHandlerClass = type("Answering", (Engine,), {})
    verdict = ep.probe(open_url, "http://127.0.0.1:%d" % engine.server_port, "k", "ds41f-tiny", 5)
    assert verdict["state"] == "answering" and verdict["ok"]


def test_the_probe_finds_a_hung_engine_within_its_deadline(engine):
    engine.RequestHandlerClass = type("Hung", (Engine,), {"hung": True, "metrics": with_values(running=1)})
    start = time.monotonic()
    verdict = ep.probe(open_url, "http://127.0.0.1:%d" % engine.server_port, "k", "ds41f-tiny", 1.5)
    assert time.monotonic() - start < 5
    assert verdict["state"] == "stalled" and verdict["seen"].startswith("1 request(s) running, no prompt")
