"""The bench's sampled suites against a live server: quality gate, decode, portable, precision, cold prefill,
sampled decode, prefix replay (the admission and compliance suites are in their own modules).

Every sample waits until the engine reports no running or waiting request (its /metrics), and is taken again
when the engine finished more requests than the sample sent (someone else's request overlapped it). A warm-up
round is discarded; then points are sampled in shuffled rounds until each one's 95% interval on its
convergence metric is within the precision target of its mean, or it reaches its sample cap.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import uuid
from pathlib import Path

from ds41f.bench import client, counters, prompts, quality, stats

CHARS_PER_TOKEN = 3.0  # first guess for source text; calibrated from every prefill's usage
PREFILL_METRICS = ("prefill_tps", "ttft_s")


class BenchError(RuntimeError):
    """The bench cannot go on (a failed request, a busy engine, a failed gate); the message says why."""


def decode_metrics(results, acceptance=None):
    """One decode sample (one wave of concurrent streams) from its requests' timings and usage.

    ``step_ms`` is the time per engine step: exact for one stream (its decode span over its steps), for several
    an estimate from the decode window over the longest stream's steps. A step emits ``tokens_per_step`` tokens
    per stream: one plus the accepted drafts with speculative decoding (from the engine's counters, see
    counters.acceptance), exactly one without it; where that is unknown, step_ms is too.
    """
    start = min(r["t_send"] for r in results)
    first = min(r["t_first"] for r in results)
    end = max(r["t_last"] for r in results)
    tokens = sum(r["usage"]["completion_tokens"] for r in results)
    after_first = sum(max(r["usage"]["completion_tokens"] - 1, 0) for r in results)
    out = {
        "tps": tokens / (end - start),
        "decode_window_tps": after_first / (end - first) if end > first else 0.0,
        "ttft_s": stats.mean([r["t_first"] - r["t_send"] for r in results]),
        "completion_tokens": tokens,
        "streams": len(results),
        "finish_reasons": sorted({str(r.get("finish_reason")) for r in results}),
    }
    acceptance = acceptance or {}
    if "tokens_per_step" in acceptance:
        per_step = acceptance["tokens_per_step"]
        out.update(accepted_per_step=acceptance["accepted_per_step"], tokens_per_step=per_step)
        if "accepted_per_verified" in acceptance:
            out["accepted_per_verified"] = acceptance["accepted_per_verified"]
    elif acceptance.get("not_available") == counters.NOT_AVAILABLE:
        per_step = 1.0  # no speculative decoding: one token per stream per step
    else:
        per_step = None
    steps = max((r["usage"]["completion_tokens"] - 1) for r in results)
    if per_step and steps > 0:
        out["step_ms"] = 1000.0 * (end - first) / (steps / per_step)  # one stream: its own decode span
        out["derived_tps"] = per_step * len(results) * 1000.0 / out["step_ms"]
    return out


def prefill_metrics(result):
    ttft = result["t_first"] - result["t_send"]
    prompt_tokens = result["usage"]["prompt_tokens"]
    return {"prefill_tps": prompt_tokens / ttft, "ttft_s": ttft, "prompt_tokens": prompt_tokens}


class Point:
    """One measured point: its requests, the metric it is compared on, the one it converges on, its samples."""

    def __init__(self, name, kind, metric, params, converge=None, min_samples=3, max_samples=4):
        self.name, self.kind, self.metric, self.params = name, kind, metric, params
        self.converge = converge or metric
        self.min_samples, self.max_samples = min_samples, max_samples
        self.samples = []
        self.notes = []

    def values(self, metric=None):
        metric = metric or self.converge
        return [s[metric] for s in self.samples if isinstance(s.get(metric), (int, float))]

    def done(self, precision):
        return stats.precise_enough(self.values(), precision, self.min_samples, self.max_samples) or \
            len(self.samples) >= self.max_samples

    def summary(self):
        out = {"name": self.name, "kind": self.kind, "metric": self.metric, "converge_on": self.converge,
               "params": self.params, "samples": self.samples, "notes": self.notes}
        names = sorted({k for s in self.samples for k, v in s.items() if isinstance(v, (int, float))})
        for metric in names:
            values = self.values(metric)
            m, half = stats.ci95(values)
            out[metric] = {"mean": m, "ci95": half if half != math.inf else None, "n": len(values)}
        return out


class Bench:
    def __init__(self, url, model, options, log=print, monitor=None, context=None):
        self.url, self.model, self.o, self.log = url.rstrip("/"), model, options, log
        self.monitor = monitor  # memory.Monitor: its ``tripped`` stops the run between samples
        self.context = context  # the server's context in tokens (/v1/models max_model_len), None where unknown
        self.unmeasured = {}  # point name: why the server could not serve it (a reference point short there)
        self.chars_per_token = {}  # per prefill text; calibrated from /tokenize and usage
        self.can_tokenize = True  # until the server answers /tokenize with anything but 200
        self.offset = 0
        self.requests = 0
        self.last_acceptance = None  # of the latest sample, from the engine's counters around it

    def opt(self, name, default):
        return getattr(self.o, name, default)

    def serves(self, name, prompt_tokens, output_tokens):
        """Whether a prompt and output of these lengths fit the server's context; a point that does not is
        recorded as not served (and not sent: the server would refuse it)."""
        if self.context is None or prompt_tokens + output_tokens <= self.context:
            return True
        self.unmeasured[name] = "past the server's %d-token context" % self.context
        self.log("  %s not measured: %s" % (name, self.unmeasured[name]))
        return False

    # -- requests ------------------------------------------------------------------------------------

    def body(self, messages, max_tokens, reasoning, fixed=True, temperature=0.0):
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                "chat_template_kwargs": {"thinking": bool(reasoning), "enable_thinking": bool(reasoning)}}
        if temperature:
            body["top_p"] = 1.0
        if fixed:  # exactly max_tokens tokens, so every sample does the same work
            body.update(min_tokens=max_tokens, ignore_eos=True)
        return body

    async def prefill_prompt(self, tokens, text=None):
        """Messages of about ``tokens`` prompt tokens from a fresh stretch of the prefill text. Where the server
        counts tokens (/tokenize), the text is cut to its count, within about 1%; elsewhere by the running
        characters-per-token ratio, which a stretch of denser text misses by 10-15%."""
        text = text or self.opt("prefill_text", "source")
        tag = uuid.uuid4().hex  # the same first line in the prompt counted and the prompt sent
        ratio = self.chars_per_token.get(text, CHARS_PER_TOKEN)
        messages = prompts.prefill_messages(tokens, ratio, self.offset, tag, text)
        for _ in range(3 if self.can_tokenize else 0):  # a few rounds: the first line and chat template do not scale
            counted = await client.count_tokens(self.url, self.model, messages, self.o.api_key)
            if not counted:
                self.can_tokenize = False
                break
            if abs(counted - tokens) <= tokens // 100:
                break
            ratio *= tokens / counted
            messages = prompts.prefill_messages(tokens, ratio, self.offset, tag, text)
        self.chars_per_token[text] = ratio
        return messages

    async def send(self, bodies):
        self.requests += len(bodies)
        try:
            return await asyncio.gather(*(client.chat_stream(self.url, b, self.o.request_timeout, self.o.api_key)
                                          for b in bodies))
        except (TimeoutError, client.RequestError, OSError) as exc:
            raise BenchError("a request failed: %s" % exc) from exc

    async def metrics(self):
        """The engine's /metrics, or None where it cannot be read."""
        try:
            return await client.engine_metrics(self.url)
        except (client.RequestError, OSError):
            return None

    async def idle(self):
        """Wait until the engine runs nothing; return its /metrics then (None without the idle gate)."""
        if not self.o.idle_gate:
            return None
        deadline = time.monotonic() + self.o.idle_timeout
        while True:
            try:
                m = await client.engine_metrics(self.url)
            except (client.RequestError, OSError) as exc:
                raise BenchError("cannot read %s/metrics (%s). Fix: point --url at the engine, or pass "
                                 "--no-idle-gate to sample without knowing whether it is idle" % (self.url, exc)) \
                    from exc
            running, waiting, _ = client.load_of(m)
            if running == 0 and waiting == 0:
                return m
            if time.monotonic() > deadline:
                raise BenchError("the engine stayed busy for %d s (running %d, waiting %d): someone else is using it"
                                 % (self.o.idle_timeout, running, waiting))
            await asyncio.sleep(0.2)

    def check_memory(self):
        if self.monitor is not None and self.monitor.tripped:
            raise BenchError(self.monitor.tripped)

    async def sample(self, bodies):
        """Send one wave when the engine is idle; repeat it when foreign requests overlapped it."""
        for _ in range(self.o.overlap_retries + 1):
            self.check_memory()
            before = await self.idle()
            if before is None:
                before = await self.metrics()
            results = await self.send(bodies)
            after = await self.metrics()
            self.last_acceptance = counters.acceptance(before, after)
            if not self.o.idle_gate or before is None or after is None:
                return results
            if client.load_of(after)[2] - client.load_of(before)[2] <= len(bodies):
                return results
            self.log("  a foreign request overlapped the sample (%d finished, %d sent): repeating" % (
                client.load_of(after)[2] - client.load_of(before)[2], len(bodies)))
        raise BenchError("every try of a sample overlapped someone else's requests")

    # -- suites --------------------------------------------------------------------------------------

    async def quality_gate(self, task):
        body = self.body([{"role": "user", "content": task["prompt"]}], task["max_tokens"], task["reasoning"],
                         fixed=False)
        runs = []
        for i in range(self.o.quality_runs):
            result = (await self.sample([body]))[0]
            ok, why = quality.judge(task, result["text"])
            runs.append({"run": i + 1, "passed": ok, "why": why, "finish_reason": result["finish_reason"],
                         "completion_tokens": result["usage"]["completion_tokens"]})
            self.log("  quality %s run %d/%d: %s (%s)" % (task["name"], i + 1, self.o.quality_runs,
                                                          "pass" if ok else "FAIL", why))
            if not ok:
                break  # all must pass: one failure decides
        return {"task": task["name"], "runs": runs, "required": self.o.quality_runs,
                "passed": len(runs) == self.o.quality_runs and all(r["passed"] for r in runs)}

    def point(self, name, kind, metric, params, converge=None, min_samples=None, max_samples=None):
        override = self.opt("converge_on", None)
        if kind == "prefill" and override not in PREFILL_METRICS:
            override = None  # a decode metric (step_ms) a prefill sample does not have
        return Point(name, kind, metric, params, override or converge,
                     min_samples or self.o.min_samples, max_samples or self.o.max_samples)

    def decode_points(self):
        points = []
        for kind in self.o.prompts:
            for reasoning in self.o.reasoning:
                for c in self.o.concurrency:
                    name = "decode/%s/%s/c%d" % (kind, "think" if reasoning else "nothink", c)
                    points.append(self.point(name, "decode", "tps", {"prompt": kind, "reasoning": reasoning,
                                                                     "concurrency": c,
                                                                     "max_tokens": self.o.max_tokens}))
        return points

    def portable_points(self):
        tokens = self.opt("portable_tokens", 256)
        return [self.point("portable/%s/c%d" % (case, c), "portable", "tps",
                           {"case": case, "concurrency": c, "max_tokens": tokens,
                            "temperature": prompts.PORTABLE_TEMPERATURE.get(case, 0.0)})
                for case in self.opt("portable_cases", prompts.PORTABLE) for c in self.o.concurrency]

    def precision_points(self):
        tokens = self.opt("precision_tokens", 1024)
        return [self.point("precision/%s/c%d" % (case, c), "precision", "tps",
                           {"case": case, "concurrency": c, "max_tokens": tokens}, converge="step_ms",
                           min_samples=self.opt("precision_min_samples", 5),
                           max_samples=self.opt("precision_max_samples", 12))
                for case in self.opt("precision_cases", tuple(prompts.PRECISION))
                for c in self.opt("precision_concurrency", [1])]

    def prefill_points(self):
        text = self.opt("prefill_text", "source")
        return [self.point("prefill/%s/%d" % (text, n), "prefill", "prefill_tps", {"tokens": n, "text": text})
                for n in self.o.prefill_lengths if self.serves("prefill/%s/%d" % (text, n), n, 1)]

    async def measure(self, point):
        p = point.params
        if point.kind in ("decode", "portable", "precision"):
            if point.kind == "decode":
                bodies = [self.body(prompts.decode_messages(p["prompt"], s), p["max_tokens"], p["reasoning"])
                          for s in range(p["concurrency"])]
            elif point.kind == "portable":
                bodies = [self.body(prompts.portable_messages(p["case"], s), p["max_tokens"], False,
                                    temperature=p["temperature"]) for s in range(p["concurrency"])]
            else:  # natural answers longer than the budget: nothing is forced past its end
                bodies = [self.body(prompts.precision_messages(p["case"], s), p["max_tokens"], False, fixed=False)
                          for s in range(p["concurrency"])]
            results = await self.sample(bodies)
            if point.kind == "precision":
                scores = self.keep_outputs(point, results)
                short = [r["usage"]["completion_tokens"] for r in results
                         if r["usage"]["completion_tokens"] < p["max_tokens"]]
                if short:
                    note = "WARN %s: %d output(s) stopped before the %d-token budget (%s tokens): lengthen the " \
                           "prompt" % (point.name, len(short), p["max_tokens"], ", ".join(map(str, short)))
                    self.log("  " + note)
                    point.notes.append(note)
            metrics = decode_metrics(results, self.last_acceptance)
            if point.kind == "precision" and scores:
                metrics["json_objects"] = stats.mean([x["objects"] for x in scores])
                metrics["json_schema_valid"] = stats.mean([x["json_schema_valid"] for x in scores])
                metrics["json_first_violation"] = next((x["first_violation"] for x in scores
                                                        if x["first_violation"]), None)
            return metrics
        self.offset += 7919  # a different stretch of text every time, besides the unique first line
        messages = await self.prefill_prompt(p["tokens"], p.get("text"))
        result = (await self.sample([self.body(messages, 1, False, fixed=False)]))[0]
        got = result["usage"]["prompt_tokens"]
        text = p.get("text", "source")
        self.chars_per_token[text] = self.chars_per_token.get(text, CHARS_PER_TOKEN) * p["tokens"] / max(got, 1)
        return prefill_metrics(result)

    def keep_outputs(self, point, results):
        """Write a precision point's outputs under <report>/outputs/<point>/ (json-1k: also the closed prefix as
        .json) and return json-1k's scores (an empty list for the other cases)."""
        from ds41f.bench import compliance

        folder = Path(self.opt("output_dir", ".")) / "outputs" / point.name.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        scores = []
        for stream, r in enumerate(results):
            stem = folder / ("sample%d-stream%d" % (len(point.samples) + 1, stream))
            stem.with_suffix(".txt").write_text(r["text"])
            if point.params["case"] == "json-1k":
                score = compliance.score_truncated(r["text"])
                score_text = score["closed"]
                scores.append(score)
                if score.pop("closed"):
                    stem.with_suffix(".json").write_text(score_text)
        return scores

    async def sampled(self, points, deadline):
        for point in list(points):  # warm-up round: compiles, caches, clocks; discarded
            try:
                await self.measure(point)
            except BenchError as exc:  # a server of unknown context refuses a prompt past it (HTTP 400)
                if point.kind != "prefill" or "HTTP 400" not in str(exc):
                    raise
                self.unmeasured[point.name] = "the server refused it: %s" % str(exc)[:200]
                self.log("  %s not measured: %s" % (point.name, self.unmeasured[point.name]))
                points.remove(point)
        rounds = 0
        while True:
            todo = [p for p in points if not p.done(self.o.precision)]
            if not todo:
                break
            if time.monotonic() > deadline and all(len(p.samples) >= 2 for p in points):
                self.log("  time budget spent: %d point(s) stop before their precision target" % len(todo))
                break
            random.shuffle(todo)
            rounds += 1
            for point in todo:
                point.samples.append(await self.measure(point))
            self.log("  round %d: %s" % (rounds, ", ".join(
                "%s %.2f %s" % (p.name, stats.mean(p.values()), p.converge)
                for p in sorted(todo, key=lambda p: p.name) if p.values())))
        return [p.summary() for p in points]

    async def sampled_decode(self):
        """Sampled decode (temperature 1.0, top_p 1.0): ``--sampled-requests`` requests per case, in waves of
        the case's concurrency; throughput per wave and the drafts the engine accepted per step."""
        out = []
        for c in self.opt("sampled_concurrency", [1, 4]):
            point = self.point("sampled/c%d" % c, "sampled", "tps", {"concurrency": c,
                                                                     "max_tokens": self.o.max_tokens,
                                                                     "temperature": 1.0})
            waves = max(1, math.ceil(self.opt("sampled_requests", 32) / c))
            before = await self.idle() or await self.metrics()
            for w in range(waves):
                bodies = [self.body(prompts.decode_messages("prose", w * c + s), self.o.max_tokens, False,
                                    temperature=1.0) for s in range(c)]
                point.samples.append(decode_metrics(await self.sample(bodies), self.last_acceptance))
            summary = point.summary()
            summary["requests"] = waves * c
            summary["acceptance"] = counters.acceptance(before, await self.metrics())
            self.log("  sampled c%d: %d requests, %.1f tok/s, accepted drafts per step: %s" % (
                c, waves * c, summary["tps"]["mean"], summary["acceptance"].get("accepted_per_step") or
                summary["acceptance"]["not_available"]))
            out.append(summary)
        return out

    async def prefix_replay(self, tokens):
        self.offset += 104729
        cold = await self.prefill_prompt(tokens)
        results = []
        for label in ("cold", "warm", "warm"):
            result = (await self.sample([self.body(cold, 1, False, fixed=False)]))[0]
            details = result["usage"].get("prompt_tokens_details") or {}
            results.append({"run": label, "ttft_s": result["t_first"] - result["t_send"],
                            "prompt_tokens": result["usage"]["prompt_tokens"],
                            "cached_tokens": details.get("cached_tokens")})
        return {"asked": tokens, "tokens": results[0]["prompt_tokens"], "runs": results,
                "speedup": results[0]["ttft_s"] / stats.mean([r["ttft_s"] for r in results[1:]])}

    async def run(self, task):
        """Every selected suite in order; the quality gate first, stopping the run when it fails. A stop keeps
        what was measured so far."""
        out = {"suites": list(self.o.suites)}
        if self.monitor is not None:
            self.monitor.start()
        try:
            await self._run(task, out)
        except BenchError as exc:
            out["stopped"] = str(exc)
        finally:
            if self.monitor is not None:
                await self.monitor.stop()
        out["requests"] = self.requests
        out["unmeasured"] = self.unmeasured
        return out

    @staticmethod
    def gates():
        """seed 001's quality gates, in the order they run: each stops the run when it fails."""
        from ds41f.bench import kl_gate, prefix_scan, qeval, tscan

        return (("qeval", qeval), ("kl", kl_gate), ("tscan", tscan), ("prefix_scan", prefix_scan))

    async def _run(self, task, out):
        from ds41f.bench import admission, compliance_suite

        deadline = time.monotonic() + self.o.time_budget
        suites = self.o.suites
        if "quality" in suites:
            self.log("quality gate: %s, %d runs" % (task["name"], self.o.quality_runs))
            out["quality"] = await self.quality_gate(task)
            if not out["quality"]["passed"]:
                out["stopped"] = "the quality gate failed"
                return
        for suite, module in self.gates():
            if suite in suites:
                self.log("%s gate (seed 001)" % suite)
                out[suite] = await module.run(self)
                if out[suite]["passed"] is False:
                    out["stopped"] = "the %s gate failed: %s" % (suite, out[suite]["why"])
                    return
        if "compliance" in suites:
            self.log("compliance: structured output, prompt-only and through response_format")
            out["compliance"] = await compliance_suite.run(self)
        points = []
        for suite, make in (("decode", self.decode_points), ("portable", self.portable_points),
                            ("precision", self.precision_points), ("prefill", self.prefill_points)):
            if suite in suites:
                points += make()
        if points:
            self.log("sampling %d points (precision %.1f%%)" % (len(points), self.o.precision * 100))
            out["points"] = await self.sampled(points, deadline)
        if "sampled" in suites:
            self.log("sampled decode: temperature 1.0, %d requests per case" % self.opt("sampled_requests", 32))
            out["sampled"] = await self.sampled_decode()
        if "prefix" in suites and self.serves("prefix/%d" % self.o.prefix_length, self.o.prefix_length, 1):
            self.log("prefix replay: %d tokens, cold then two replays" % self.o.prefix_length)
            out["prefix"] = await self.prefix_replay(self.o.prefix_length)
        if "admission" in suites:
            self.log("admission: %d concurrent %d-token contexts" % (self.opt("admission_contexts", 4),
                                                                     self.opt("admission_tokens", 65536)))
            out["admission"] = await admission.run(self)
