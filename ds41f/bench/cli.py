"""`ds41f bench`: measure a live OpenAI-compatible server and compare it with a reference run.

Exit status: 0 no regression, 1 a point slower than the reference beyond the tolerance (Welch 95%),
2 the run stopped (failed quality gate, failed request, busy engine).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from ds41f import paths
from ds41f.bench import client, quality, report, runner

SUITES = ("quality", "decode", "prefill", "prefix")


def _ints(text):
    return [int(x) for x in text.split(",") if x]


def _words(choices):
    def parse(text):
        items = [x for x in text.split(",") if x]
        bad = [x for x in items if x not in choices]
        if bad:
            raise ValueError("%s (choose from %s)" % (", ".join(bad), ", ".join(choices)))
        return items
    parse.__name__ = "list of " + "/".join(choices)
    return parse


def _onoff(text):
    return [{"on": True, "off": False}[x] for x in _words(("on", "off"))(text)]


def add_parser(sub):
    p = sub.add_parser("bench", help="the serving benchmark: quality gate, decode, prefill, prefix replay; "
                                     "compares with a reference and exits non-zero on a regression")
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server (the head node's API)")
    p.add_argument("--model", help="served model name (default: the server's first)")
    p.add_argument("--api-key-file", help="file holding the API key (KEY or VLLM_API_KEY=KEY; default: "
                                          "$DS41F_API_KEY, else none)")
    p.add_argument("--output", help="report folder (default: reports/bench/<UTC time>)")
    p.add_argument("--suites", type=_words(SUITES), default=list(SUITES), help="comma list of " + ",".join(SUITES))
    p.add_argument("--concurrency", type=_ints, default=[1, 2, 4, 8, 16])
    p.add_argument("--prompts", type=_words(("prose", "code")), default=["prose", "code"])
    p.add_argument("--reasoning", type=_onoff, default=[True, False], help="on,off")
    p.add_argument("--max-tokens", type=int, default=256, help="output tokens of every decode stream")
    p.add_argument("--prefill-lengths", type=_ints, default=[2048, 32768, 65536, 131072])
    p.add_argument("--prefix-length", type=int, default=32768)
    p.add_argument("--precision", type=float, default=0.02, help="target 95%% half-width / mean")
    p.add_argument("--min-samples", type=int, default=3)
    p.add_argument("--max-samples", type=int, default=10)
    p.add_argument("--time-budget", type=float, default=1800, help="seconds before points stop short of precision")
    p.add_argument("--quality-task", help="JSON task file (default: the built-in LRU cache task)")
    p.add_argument("--quality-runs", type=int, default=5)
    p.add_argument("--compare", help="a reference bench.json")
    p.add_argument("--tolerance", type=float, default=3.0, help="percent slower that counts as a regression")
    p.add_argument("--no-idle-gate", dest="idle_gate", action="store_false",
                   help="sample without checking that the engine is idle (its /metrics)")
    p.add_argument("--idle-timeout", type=float, default=120)
    p.add_argument("--overlap-retries", type=int, default=3)
    p.add_argument("--request-timeout", type=float, default=900)
    p.set_defaults(api_key=None)  # read from --api-key-file or the environment when the run starts
    return p


async def _model(url, api_key):
    data = json.loads(await client.get_text(url.rstrip("/") + "/v1/models", api_key=api_key))
    return data["data"][0]["id"]


def api_key(path):
    """The key from a file (a bare key, or the serve stage's env file line VLLM_API_KEY=...), or $DS41F_API_KEY."""
    if not path:
        return os.environ.get("DS41F_API_KEY") or None
    text = Path(path).read_text().strip()
    for line in text.splitlines():
        if line.startswith("VLLM_API_KEY="):
            return line.split("=", 1)[1].strip()
    return text or None


def run(args, log=print):
    try:
        task = quality.load_task(args.quality_task)
    except quality.TaskError as exc:
        log("ds41f bench: %s" % exc)
        return report.EXIT_STOPPED
    reference = report.load(args.compare) if args.compare else None
    args.api_key = api_key(args.api_key_file)
    out_dir = Path(args.output or paths.ROOT / "reports" / "bench" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    try:
        model = args.model or asyncio.run(_model(args.url, args.api_key))
        bench = runner.Bench(args.url, model, args, log)
        result = asyncio.run(bench.run(task))
    except (runner.BenchError, client.RequestError, OSError) as exc:
        result, model = {"stopped": str(exc)}, args.model
    data = {"meta": {"url": args.url, "model": model, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                               time.gmtime(started)),
                     "seconds": round(time.time() - started, 1), "max_tokens": args.max_tokens,
                     "precision": args.precision, "tolerance_pct": args.tolerance, "idle_gate": args.idle_gate,
                     "reference": args.compare}}
    data.update(result)
    data["comparison"] = report.compare(data.get("points"), (reference or {}).get("points"), args.tolerance)
    if reference:
        data["comparison_notes"] = report.comparable(data, reference)
    status, why = report.verdict(data, data["comparison"])
    data["verdict"] = {"exit": status, "reason": why}
    (out_dir / "bench.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    written = [str(out_dir / "bench.json")]
    try:
        from ds41f.bench import charts

        written += charts.draw(data, str(out_dir))
    except ImportError as exc:
        log("charts not drawn: %s. Fix: pip install matplotlib" % exc)
    for line in report.summary_lines(data) + data.get("comparison_notes", []):
        log(line)
    log("ds41f bench: %s (exit %d); report: %s" % (why, status, ", ".join(written)))
    return status
