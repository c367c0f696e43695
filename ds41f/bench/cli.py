"""`ds41f bench`: measure a live OpenAI-compatible server and compare it with a reference.

Exit status: 0 no regression; 1 not qualified against the reference: a point slower beyond the tolerance (Welch
95%), a reference point the server cannot serve or the run did not measure, or a run that is not the reference's
system (another model or shape); 2 the run stopped (failed quality gate or admission check, failed request,
busy engine, memory, the doctor).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from ds41f import paths, secret_env
from ds41f.bench import (
    client,
    doctor,
    identity,
    kl_gate,
    markdown,
    memory,
    prompts,
    qeval,
    quality,
    reference,
    report,
    runner,
)

GATES = ("qeval", "kl", "tscan", "prefix_scan")  # seed 001's quality gates (runner.Bench.gates)
SUITES = ("quality",) + GATES + ("compliance", "decode", "portable", "precision", "prefill", "sampled", "prefix",
                                 "admission")
QUICK = ("quality", "decode", "prefill", "prefix")
FULL = tuple(s for s in SUITES if s != "compliance" and s not in GATES)  # those are asked for by name (or all)
SAMPLES = {"quick": (3, 4), "full": (6, 40)}  # min, max samples per point
METRICS = ("tps", "decode_window_tps", "ttft_s", "step_ms", "derived_tps", "prefill_tps")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _ints(text):
    return [int(x) for x in text.split(",") if x]


def _words(choices, extra=()):
    def parse(text):
        items = [x for x in text.split(",") if x]
        bad = [x for x in items if x not in choices and x not in extra]
        if bad:
            raise ValueError("%s (choose from %s)" % (", ".join(bad), ", ".join(tuple(choices) + tuple(extra))))
        return items
    parse.__name__ = "list of " + "/".join(tuple(choices) + tuple(extra))
    return parse


def _onoff(text):
    return [{"on": True, "off": False}[x] for x in _words(("on", "off"))(text)]


def add_parser(sub):
    p = sub.add_parser("bench", help="the serving benchmark a release is qualified with: quality gate, decode, "
                                     "prefill, prefix, admission, sampled, compliance, precision, portable; "
                                     "compares with a reference and exits non-zero on a regression")
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server (the head node's API; https:// where "
                                                                  "the site gives it a certificate)")
    p.add_argument("--ca-file", help="an https:// server's certificate must verify against this file alone: the "
                                     "site's serve_tls_certificate (default: the system's CAs)")
    p.add_argument("--model", help="served model name (default: the server's first)")
    p.add_argument("--api-key-file", help="file holding the API key (KEY or VLLM_API_KEY=KEY), - for standard input; "
                                          "default: $DS41F_API_KEY, else none. Never give the key itself as an "
                                          "argument: every local user sees a command line")
    p.add_argument("--output", help="report folder (default: reports/bench/<UTC time>)")
    p.add_argument("--suites", "--suite", type=_words(SUITES, ("all",)), default=None,
                   help="comma list of %s, or all (default: %s; --full: every suite but compliance)"
                        % (",".join(SUITES), ",".join(QUICK)))
    p.add_argument("--full", action="store_true", help="every suite but compliance, each point sampled to its "
                                                      "precision target with 6-40 samples (quick: 3-4)")
    p.add_argument("--concurrency", type=_ints, default=[1, 2, 4, 8, 16])
    p.add_argument("--prompts", type=_words(("prose", "code")), default=["prose", "code"])
    p.add_argument("--reasoning", type=_onoff, default=[True, False], help="on,off")
    p.add_argument("--max-tokens", type=int, default=256, help="output tokens of every decode stream")
    p.add_argument("--prefill-lengths", type=_ints, default=[2048, 32768, 65536, 131072])
    p.add_argument("--prefill-text", choices=prompts.PREFILL_TEXTS, default="source",
                   help="source: the Python standard library's source; filler: one repeated 18-word phrase; "
                        "novel: random pseudo-words")
    p.add_argument("--prefix-length", type=int, default=32768)
    p.add_argument("--precision", type=float, default=0.02, help="target 95%% half-width / mean")
    p.add_argument("--min-samples", type=int, help="per point (default: 3 quick, 6 full)")
    p.add_argument("--max-samples", type=int, help="per point (default: 4 quick, 40 full)")
    p.add_argument("--converge-on", choices=METRICS, help="the metric every point converges on (default: tps for "
                                                          "decode, prefill_tps for prefill, step_ms for precision)")
    p.add_argument("--time-budget", type=float, default=1800, help="seconds before points stop short of precision")
    p.add_argument("--quality-task", help="JSON task file (default: the built-in LRU cache task)")
    p.add_argument("--quality-runs", type=int, default=5)
    p.add_argument("--portable-cases", type=_words(prompts.PORTABLE), default=list(prompts.PORTABLE))
    p.add_argument("--portable-tokens", type=int, default=256)
    p.add_argument("--precision-cases", type=_words(tuple(prompts.PRECISION)), default=list(prompts.PRECISION))
    p.add_argument("--precision-tokens", type=int, default=1024)
    p.add_argument("--precision-concurrency", type=_ints, default=[1])
    p.add_argument("--precision-min-samples", type=int, default=5)
    p.add_argument("--precision-max-samples", type=int, default=12)
    p.add_argument("--sampled-requests", type=int, default=32, help="requests per sampled case")
    p.add_argument("--sampled-concurrency", type=_ints, default=[1, 4])
    p.add_argument("--admission-contexts", type=int, default=4)
    p.add_argument("--admission-tokens", type=int, default=65536)
    p.add_argument("--admission-output", type=int, default=128, help="output tokens of each admission context")
    p.add_argument("--qeval-tasks", help="qeval: JSON list of auto-scored tasks (the quality task format); the "
                                         "seed's 75 are not published, so qeval does not run without it")
    p.add_argument("--qeval-runs", type=int, default=3, help="qeval: scored runs of the panel (seed 001: three)")
    p.add_argument("--qeval-reference", help="qeval: an earlier bench.json with a qeval; the run passes when it "
                                             "misses no task the reference passes")
    p.add_argument("--kl-reference", help="kl: the reference stack, an earlier run's outputs/kl-logprobs.json "
                                          "(its prompts are sent again); without it kl records, not judges")
    p.add_argument("--kl-tokens", type=int, default=32, help="kl: greedy continuation length per prompt")
    p.add_argument("--kl-long-lengths", type=_ints, default=[16500, 40000], help="kl: long panel prompt tokens")
    p.add_argument("--kl-short-lengths", type=_ints, default=[1000, 3000], help="kl: short panel prompt tokens")
    p.add_argument("--tscan-temperature", type=float, help="tscan: the sampling temperature (seed 001: T > 0, "
                                                           "no value); tscan does not run without it")
    p.add_argument("--tscan-outputs", type=int, default=35)
    p.add_argument("--prefix-scan-tokens", type=int, default=32, help="prefix_scan: output tokens per hit")
    p.add_argument("--compliance-records", type=int, default=8, help="record types asked for (at most 8)")
    p.add_argument("--compliance-items", type=int, default=12, help="objects per array")
    p.add_argument("--compliance-max-tokens", type=int, default=4096)
    p.add_argument("--shape", help="the cluster's shape (default: the --inventory site file's); caps concurrency "
                                   "at its sequences and picks the seed reference")
    p.add_argument("--max-seqs", type=int, help="sequences the server admits at once (default: the shape's)")
    p.add_argument("-i", "--inventory", help="the cluster's site file (or its folder): the doctor runs on it first, "
                                             "and memory and identity are read from its nodes over SSH")
    p.add_argument("--skip-doctor", action="store_true", help="measure without the doctor run (the report says so)")
    p.add_argument("--memory-interval", type=float, default=2.0, help="seconds between MemAvailable readings")
    p.add_argument("--steady-guard-gib", type=float, help="default: the serve stage's serve_guard_steady_gib")
    p.add_argument("--compare", nargs="?", const="seed", help="a reference: bench.json PATH; seed (the default "
                   "when the flag is given alone: the seeds' published figures for the shape); seed:SET "
                   "(spark-ds41f-1107, r6, r5o, r5l); none")
    p.add_argument("--tolerance", type=float, default=3.0, help="percent slower that counts as a regression")
    p.add_argument("--no-idle-gate", dest="idle_gate", action="store_false",
                   help="sample without checking that the engine is idle (its /metrics)")
    p.add_argument("--idle-timeout", type=float, default=120)
    p.add_argument("--overlap-retries", type=int, default=3)
    p.add_argument("--request-timeout", type=float, default=900)
    p.set_defaults(api_key=None)  # read from --api-key-file or the environment when the run starts
    return p


async def _model(url, api_key, name=None):
    """(served model name, its context in tokens or None): --model, else the server's first (/v1/models; vLLM
    and SGLang both give max_model_len)."""
    models = json.loads(await client.get_text(url.rstrip("/") + "/v1/models", api_key=api_key))["data"]
    entry = next((m for m in models if m["id"] == name), None) if name else models[0]
    return name or entry["id"], (entry or {}).get("max_model_len")


def api_key(path, stdin=sys.stdin):
    """The key from a file or standard input (``-``): a bare key, or the serve stage's env file line
    VLLM_API_KEY=...; else $DS41F_API_KEY (held by secret_env, so no process the bench starts inherits it)."""
    if not path:
        return secret_env.held("DS41F_API_KEY") or os.environ.get("DS41F_API_KEY") or None
    text = (stdin.read() if path == "-" else Path(path).read_text()).strip()
    for line in text.splitlines():
        if line.startswith("VLLM_API_KEY="):
            return line.split("=", 1)[1].strip()
    return text or None


def site_file(inventory):
    if inventory is None:
        return None
    path = Path(inventory)
    if path.is_dir():
        found = sorted(path.glob("*.spark.yml"))
        if not found:
            raise SystemExit("ds41f bench: --inventory %s holds no *.spark.yml site file" % inventory)
        path = found[0]
    return path


def max_seqs(args, shape):
    """Sequences the server admits at once: --max-seqs, else the shape's (plugins/module_utils/topology.py)."""
    if args.max_seqs:
        return args.max_seqs, "--max-seqs %d" % args.max_seqs
    if shape is None:
        return None, None
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology

    if shape not in topology.SHAPES:
        raise SystemExit("ds41f bench: --shape %s is not a shape. Fix: one of %s" % (shape, ", ".join(topology.SHAPES)))
    return topology.SHAPES[shape].max_seqs, "the %d sequences of %s" % (topology.SHAPES[shape].max_seqs, shape)


def resolve(args):
    """Suites, sample counts and concurrency caps from the flags; returns what the method section reports."""
    mode = "full" if args.full else "quick"
    if args.suites is None:
        args.suites = list(FULL if args.full else QUICK)
    elif "all" in args.suites:
        args.suites = list(SUITES)
    lo, hi = SAMPLES[mode]
    args.min_samples = args.min_samples or lo
    args.max_samples = args.max_samples or hi
    if args.full:
        args.precision_min_samples = max(args.precision_min_samples, 5)
    skipped = []
    cap, why = max_seqs(args, args.shape)
    if cap:
        for name in ("concurrency", "sampled_concurrency", "precision_concurrency"):
            values = getattr(args, name)
            over = [c for c in values if c > cap]
            if over:
                skipped.append("%s %s: past %s" % (name.replace("_", " "), ",".join("c%d" % c for c in over), why))
            setattr(args, name, [c for c in values if c <= cap])
    return {"mode": mode, "samples": "%d-%d" % (args.min_samples, args.max_samples), "converge_on": args.converge_on,
            "suites": args.suites, "max_seqs": cap, "skipped": skipped}


def check_gate_inputs(args):
    """The gates' files, read before anything is sent (a bad one fails here, naming the flag)."""
    if args.qeval_tasks:
        qeval.load_panel(args.qeval_tasks)
    if args.qeval_reference:
        qeval.reference_passed(args.qeval_reference)
    if args.kl_reference:
        kl_gate.load_reference(args.kl_reference)


def _monitor(args, hosts, loopback, log):
    guard = args.steady_guard_gib if args.steady_guard_gib is not None else memory.steady_guard_gib()
    if hosts:
        nodes = {h: memory.ssh_argv(v, h) for h, v in hosts.items()}
    elif loopback:
        nodes = {memory.LOCAL: None}
    else:
        return None, "no --inventory to reach the nodes of %s, and it is not this machine" % args.url
    return memory.Monitor(nodes, guard, args.memory_interval, log), None


class TrustError(ValueError):
    """--ca-file that cannot be trusted as given."""


def trust(url, ca_file):
    """The client's TLS trust: ``ca_file`` alone (the site's certificate, as the collection's clients trust it)."""
    if not ca_file:
        return
    if urlsplit(url).scheme != "https":
        raise TrustError("--ca-file %s: the URL %s is not https://. Fix: give the https:// URL of the API, or no "
                         "--ca-file" % (ca_file, url))
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls

    try:
        client.trust(tls.client_context(ca_file))
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a file that holds no certificate
        raise TrustError("--ca-file %s: %s. Fix: name the site's certificate file (PEM)" % (ca_file, exc)) from None


def run(args, log=print):
    try:
        task = quality.load_task(args.quality_task)
        check_gate_inputs(args)
        trust(args.url, args.ca_file)
    except (quality.TaskError, qeval.PanelError, kl_gate.KLReferenceError, TrustError) as exc:
        log("ds41f bench: %s" % exc)
        return report.EXIT_STOPPED
    site = site_file(args.inventory)
    if args.shape is None and site is not None:
        args.shape = (yaml.safe_load(site.read_text()) or {}).get("shape")
    method = resolve(args)
    try:
        ref = reference.load(args.compare, args.shape)
    except reference.ReferenceError as exc:
        log("ds41f bench: %s" % exc)
        return report.EXIT_STOPPED
    args.api_key = api_key(args.api_key_file)
    out_dir = Path(args.output or paths.ROOT / "reports" / "bench" / paths.stamp())
    out_dir.mkdir(parents=True, exist_ok=True)
    args.output_dir = str(out_dir)
    url = args.url.rstrip("/")
    loopback = urlsplit(url).hostname in LOOPBACK
    started = time.time()
    result, model, ident, monitor, mem_note = {}, args.model, {}, None, None
    checked = doctor.run(site, out_dir / "doctor", args.skip_doctor, log)
    log("doctor: %s (%s)" % (checked["status"], checked["why"]))
    if checked["status"] == "failed":
        result = {"stopped": "the doctor refused the cluster: %s" % checked["why"]}
    else:
        try:
            hosts = memory.inventory_hosts(site) if site is not None else {}
            model, context = asyncio.run(_model(url, args.api_key, args.model))
            ident = asyncio.run(identity.collect(url, args.api_key, model, args.shape, site, hosts, loopback))
            monitor, mem_note = _monitor(args, hosts, loopback, log)
            bench = runner.Bench(url, model, args, log, monitor, context)
            result = asyncio.run(bench.run(task))
        except (runner.BenchError, client.RequestError, OSError, RuntimeError) as exc:
            result = {"stopped": str(exc)}
    data = {"meta": {"url": args.url, "model": model, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                               time.gmtime(started)),
                     "seconds": round(time.time() - started, 1), "max_tokens": args.max_tokens,
                     "precision": args.precision, "tolerance_pct": args.tolerance, "idle_gate": args.idle_gate,
                     "shape": args.shape, "reference": args.compare},
            "method": method, "doctor": checked, "identity": ident}
    data.update(result)
    data["memory"] = monitor.summary() if monitor is not None else {"not_sampled": mem_note or "the run stopped first"}
    rows, info = report.compare_with(report.comparable_points(data), ref, args.tolerance, data.get("unmeasured"))
    data["comparison"], data["reference_info"] = rows, info
    if ref:
        data["reference"] = {k: ref[k] for k in ("kind", "label", "notes", "identity") if k in ref}
        data["comparison_notes"] = report.comparable(data, ref)
        data["identity_differences"] = report.identity_differences(ident, ref)
    status, why = report.verdict(data, rows, data.get("identity_differences", ()))
    data["verdict"] = {"exit": status, "reason": why}
    (out_dir / "bench.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    written = [str(out_dir / "bench.json")]
    charts = []
    try:
        from ds41f.bench import charts as charts_module

        charts = charts_module.draw(data, str(out_dir))
    except ImportError as exc:
        log("charts not drawn: %s. Fix: pip install matplotlib" % exc)
    (out_dir / "bench.md").write_text(markdown.render(data, charts))
    written += [str(out_dir / "bench.md")] + charts
    for line in report.summary_lines(data) + data.get("comparison_notes", []):
        log(line)
    log("ds41f bench: %s (exit %d); report: %s" % (why, status, ", ".join(written)))
    return status
