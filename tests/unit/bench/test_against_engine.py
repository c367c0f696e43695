"""The bench against the real lab engine (vLLM on CPU with the tiny model, docs/lab-engine.md) on loopback.

One server for the module (about 30-60 s to start). The tiny model answers nonsense, so the default quality
gate fails there, which is what the first test needs; a criterion any text meets lets the rest run.
"""

import asyncio
import json
import math
import platform

import pytest

from ds41f import cli
from ds41f.bench import client, counters, report, runner
from ds41f.lab import engine

pytestmark = pytest.mark.lab_engine

PORT = 18731  # this module's own loopback port


@pytest.fixture(scope="module")
def server():
    with engine.running_server(PORT) as srv:
        yield srv


def bench(tmp_path, name, *extra):
    out = tmp_path / name
    args = cli.parser().parse_args([
        "bench", "--url", "http://127.0.0.1:%d" % PORT, "--output", str(out),
        "--concurrency", "1,4", "--prompts", "prose", "--reasoning", "off", "--max-tokens", "24",
        "--prefill-lengths", "256,1024", "--prefix-length", "1024", "--min-samples", "2", "--max-samples", "3",
        "--quality-runs", "2", *extra])
    return args.func(args), out


@pytest.fixture()
def any_text_task(tmp_path):
    path = tmp_path / "any-text.json"
    path.write_text(json.dumps({"prompt": "Say something.", "max_tokens": 8,
                                "criterion": {"type": "regex", "pattern": r"\S"}}))
    return str(path)


def test_a_failing_quality_gate_stops_the_bench(server, tmp_path):
    status, out = bench(tmp_path, "gate")
    report = json.loads((out / "bench.json").read_text())
    assert status == 2
    assert report["stopped"] == "the quality gate failed" and not report["quality"]["passed"]
    assert len(report["quality"]["runs"]) == 1  # the first failure decides: nothing else was sent
    assert "points" not in report


def test_a_run_measures_every_point_from_usage_and_draws_its_charts(server, tmp_path, any_text_task):
    status, out = bench(tmp_path, "run", "--quality-task", any_text_task)
    report = json.loads((out / "bench.json").read_text())
    assert status == 0 and report["quality"]["passed"] and len(report["quality"]["runs"]) == 2
    points = {p["name"]: p for p in report["points"]}
    assert set(points) == {"decode/prose/nothink/c1", "decode/prose/nothink/c4", "prefill/source/256",
                           "prefill/source/1024"}
    for p in points.values():
        assert 2 <= len(p["samples"]) <= 3
    for s in points["decode/prose/nothink/c4"]["samples"]:  # exactly max_tokens per stream, counted by usage
        assert s["completion_tokens"] == 4 * 24 and s["streams"] == 4
        assert s["decode_window_tps"] > 0 and s["ttft_s"] > 0
    for asked in (256, 1024):  # real text, cut to length by the server's /tokenize count
        assert abs(points["prefill/source/%d" % asked]["prompt_tokens"]["mean"] - asked) < asked * 0.03
    assert report["prefix"]["runs"][0]["run"] == "cold" and report["prefix"]["tokens"] > 700
    assert {p.name for p in out.iterdir()} >= {"bench.json", "bench.md", "decode.png", "prefill.png", "memory.png"}
    for s in points["decode/prose/nothink/c1"]["samples"]:  # no speculative decoding: one token per step
        assert s["step_ms"] > 0 and "accepted_per_step" not in s

    # A reference ten times as fast at every point (this shared 2-core machine moves short samples by tens of
    # percent, so the margin is wide): this run is a regression beyond the 3% tolerance.
    faster = dict(report, points=[])
    for p in report["points"]:
        fast = 10 * p[p["metric"]]["mean"]
        faster["points"].append(dict(p, samples=[dict(s, **{p["metric"]: fast}) for s in p["samples"]]))
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(faster))
    status, out = bench(tmp_path, "compare", "--quality-task", any_text_task, "--suites", "decode",
                           "--compare", str(reference))
    compared = json.loads((out / "bench.json").read_text())
    assert status == 1
    assert {c["name"] for c in compared["comparison"] if c["regression"]} == {"decode/prose/nothink/c1",
                                                                             "decode/prose/nothink/c4"}
    assert (out / "comparison.png").exists()
    assert "significantly slower beyond the tolerance: decode/prose/nothink/c1, decode/prose/nothink/c4" in \
        (out / "bench.md").read_text().splitlines()[2]


def test_samples_wait_until_the_engine_is_idle(server):
    """A foreign request is running: the idle gate returns only once the engine reports it finished."""
    args = cli.parser().parse_args(["bench"])
    # As long as the context allows. On a busy 2-core machine the server can answer /metrics only after the
    # request ended, so the scenario starts again (5 tries) until /metrics has shown the request running.
    body = {"model": server.model, "messages": [{"role": "user", "content": "go"}], "max_tokens": 2000,
            "min_tokens": 2000, "ignore_eos": True}

    async def scenario():
        finished_before = (await client.engine_load(server.url))[2]
        foreign = asyncio.ensure_future(client.chat_stream(server.url, body))
        while (await client.engine_load(server.url))[0] == 0:
            if foreign.done():
                return None
            await asyncio.sleep(0.01)
        at_idle = await runner.Bench(server.url, server.model, args, log=lambda m: None).idle()
        finished_at_idle = client.load_of(at_idle)[2]
        await foreign
        return finished_at_idle - finished_before

    for _ in range(5):
        finished = asyncio.run(asyncio.wait_for(scenario(), 240))
        if finished is not None:
            break
    assert finished == 1, "the idle gate returned before the foreign request finished (or /metrics never showed it)"


SMALL_SUITES = ["--quality-runs", "1", "--portable-cases", "count,chat-sampled", "--portable-tokens", "24",
                "--precision-tokens", "32", "--precision-min-samples", "2", "--precision-max-samples", "3",
                "--sampled-requests", "4", "--admission-contexts", "4", "--admission-tokens", "400",
                "--admission-output", "1600", "--compliance-records", "2", "--compliance-max-tokens", "64",
                "--memory-interval", "0.5", "--kl-tokens", "8", "--prefix-scan-tokens", "8"]


def test_every_suite_writes_the_report_and_compares_with_the_seed_figures(server, tmp_path, any_text_task):
    status, out = bench(tmp_path, "all", "--quality-task", any_text_task, "--suite", "all", "--compare",
                        "--prefill-lengths", "256,32768", *SMALL_SUITES)
    data = json.loads((out / "bench.json").read_text())
    assert "stopped" not in data, data.get("stopped")
    assert {p.name for p in out.iterdir()} >= {"bench.json", "bench.md", "decode.png", "prefill.png",
                                               "comparison.png", "memory.png", "outputs"}
    names = {p["name"]: p for p in data["points"]}
    assert {"portable/count/c1", "portable/chat-sampled/c4", "precision/prose-1k/c1", "precision/json-1k/c1",
            "prefill/source/256"} <= set(names)
    assert names["portable/count/c4"]["samples"][0]["completion_tokens"] == 4 * 24  # exactly the budget
    for case in ("prose-1k", "code-1k", "json-1k"):
        p = names["precision/%s/c1" % case]
        assert p["converge_on"] == "step_ms" and 2 <= len(p["samples"]) <= 3 and p["step_ms"]["mean"] > 0
    assert "json_schema_valid" in names["precision/json-1k/c1"] and "json_objects" in names["precision/json-1k/c1"]
    assert list((out / "outputs" / "precision-json-1k-c1").glob("*.txt"))
    for case in data["sampled"]:  # the CPU engine has no speculative decoding: not available, never 0
        assert case["acceptance"] == {"not_available": counters.NOT_AVAILABLE} and case["requests"] == 4
        assert all("accepted_per_step" not in s for s in case["samples"])
    assert [c["name"] for c in data["sampled"]] == ["sampled/c1", "sampled/c4"]
    adm = data["admission"]
    assert adm["passed"] and adm["preemptions"] == 0 and adm["at_once"] == 4, adm
    for arm in ("prompt", "schema"):
        requests = data["compliance"]["arms"][arm]["requests"]
        assert len(requests) == 2 and all(r["finish_reason"] in ("stop", "length") for r in requests), requests
        assert (out / "outputs" / ("compliance-%s" % arm) / "book.txt").exists()
    ident = data["identity"]
    assert ident["server_version"] == "0.32.0" and ident["nodes"]["local"]["kernel"] == platform.release()
    assert "unknown" in ident["config_hash"] and len(ident["engine_config_hash"]) == 16
    assert data["memory"]["nodes"]["local"]["samples"] >= 2 and data["doctor"]["status"] == "not run"
    # The seeds' TP4 figures: the c1 decode points are compared with 82.6 tok/s (000_72fb2218289d1604.txt:300).
    rows = {r["name"]: r for r in data["comparison"]}
    c1 = rows["decode/prose/nothink/c1"]
    assert c1["reference"] == 82.6 and c1["source"] == "000_72fb2218289d1604.txt:300"
    # Every reference figure with a point is a row: 32K is past the lab's 2048-token context (not sent, and short
    # of the reference there), c16 and 1M were not asked for; the tiny model is not the reference's system.
    assert data["unmeasured"] == {"prefill/source/32768": "past the server's 2048-token context"}
    assert rows["prefill/source/32768"]["verdict"] == report.NOT_SERVED
    assert rows["decode/*/*/c16"]["verdict"] == report.NOT_MEASURED
    assert rows["prefill/source/1048576"]["verdict"] == report.NOT_MEASURED
    assert [(d["field"], d["run"], d["reference"]) for d in data["identity_differences"]][:2] == [
        ("model", "ds41f-tiny", "deepseek-v4.1-flash"), ("shape", "unknown", "tp4-ring")]
    assert status == report.EXIT_REGRESSION and data["verdict"]["reason"].startswith(report.SLOWER)
    assert "prefill/source/32768 (past the server's 2048-token context)" in data["verdict"]["reason"]
    # seed 001's gates in an `all` run: what the lab can do runs, the rest says why not
    assert data["qeval"]["why"].startswith("not run: the seed's 75 tasks") and data["tscan"]["passed"] is None
    assert data["kl"]["passed"] is None and data["kl"]["panels"]["long"]["why"].startswith("not judged")
    assert len(data["prefix_scan"]["hits"]) == 8 and data["prefix_scan"]["prefix_tokens"] > 900
    text = (out / "bench.md").read_text()
    assert text.splitlines()[2].startswith("**Slower than the reference** (exit 1) against seed spark-ds41f-1107")
    assert "| model | ds41f-tiny | deepseek-v4.1-flash | not comparable |" in text
    assert "## Comparison with seed spark-ds41f-1107, tp4-ring" in text and "## Admission" in text
    assert "not available: the engine exposes no speculative-decoding counters" in text


@pytest.mark.parametrize("text", ["filler", "novel"])
def test_other_prefill_texts(server, tmp_path, text):
    status, out = bench(tmp_path, text, "--suites", "prefill", "--prefill-text", text, "--prefill-lengths", "256")
    point = json.loads((out / "bench.json").read_text())["points"][0]
    assert status == 0 and point["name"] == "prefill/%s/256" % text
    assert abs(point["prompt_tokens"]["mean"] - 256) < 256 * 0.03


GATES = ["--suites", "qeval,kl,tscan,prefix_scan", "--qeval-runs", "2", "--kl-short-lengths", "300",
         "--kl-long-lengths", "600", "--kl-tokens", "8", "--tscan-temperature", "0.8", "--tscan-outputs", "3",
         "--prefix-scan-tokens", "8"]


def test_seed_001_gates_record_then_judge_against_their_references(server, tmp_path):
    panel = tmp_path / "panel.json"  # one task any text passes, one the tiny model never passes
    panel.write_text(json.dumps([
        {"name": "any", "prompt": "Say something.", "max_tokens": 8, "criterion": {"type": "regex", "pattern": r"\S"}},
        {"name": "never", "prompt": "Say banana.", "max_tokens": 8, "criterion": {"type": "regex",
                                                                                   "pattern": "^banana$"}}]))
    status, first = bench(tmp_path, "record", *GATES, "--qeval-tasks", str(panel))
    data = json.loads((first / "bench.json").read_text())
    assert status == 0, data["verdict"]
    assert data["qeval"]["scores"] == [1, 1] and data["qeval"]["passed_every_run"] == ["any"]
    assert data["qeval"]["passed"] is None and data["kl"]["passed"] is None  # nothing to judge against yet
    assert data["tscan"]["errors"] == [] and len(list((first / "outputs" / "tscan").glob("*.txt"))) == 3
    assert data["prefix_scan"]["passed"] is True or "not judged: drift" in data["prefix_scan"]["why"]
    recorded = json.loads((first / "outputs" / "kl-logprobs.json").read_text())
    top = recorded["panels"]["short"][0]["tokens"][0]["top"]  # top-20, tokens of the same text merged
    assert 1 <= len(top) <= 20 and sum(math.exp(v) for v in top.values()) <= 1.0

    status, second = bench(tmp_path, "judge", *GATES, "--qeval-tasks", str(panel), "--qeval-reference",
                           str(first / "bench.json"), "--kl-reference", str(first / "outputs" / "kl-logprobs.json"))
    data = json.loads((second / "bench.json").read_text())
    assert status == 0 and data["qeval"]["passed"] is True and data["kl"]["passed"] is True, data["verdict"]
    assert data["kl"]["panels"]["short"]["positions"] >= 1 and data["kl"]["panels"]["short"]["mean_kl"] < 0.035
    assert "| kl | **passed** |" in (second / "bench.md").read_text()

    # A reference that passed the task this engine misses: the gate fails and nothing after it runs.
    reference = json.loads((first / "bench.json").read_text())
    reference["qeval"]["passed_every_run"] = ["any", "never"]
    (tmp_path / "reference.json").write_text(json.dumps(reference))
    status, third = bench(tmp_path, "fail", *GATES, "--qeval-tasks", str(panel), "--qeval-reference",
                          str(tmp_path / "reference.json"))
    data = json.loads((third / "bench.json").read_text())
    assert status == 2 and data["stopped"] == "the qeval gate failed: misses 1 task(s) the reference passes: never"
    assert "kl" not in data and "prefix_scan" not in data
