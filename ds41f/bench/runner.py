"""The bench's suites against a live server: quality gate, decode, cold prefill, prefix replay.

Every sample waits until the engine reports no running or waiting request (its /metrics), and is taken again
when the engine finished more requests than the sample sent (someone else's request overlapped it). A warm-up
round is discarded; then points are sampled in shuffled rounds until each one's 95% interval is within the
precision target of its mean, or it reaches the sample cap.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid

from ds41f.bench import client, prompts, quality, stats

CHARS_PER_TOKEN = 3.0  # first guess for source text; calibrated from every prefill's usage


class BenchError(RuntimeError):
    """The bench cannot go on (a failed request, a busy engine, a failed gate); the message says why."""


def decode_metrics(results):
    """One decode sample (one wave of concurrent streams) from its requests' timings and usage."""
    start = min(r["t_send"] for r in results)
    first = min(r["t_first"] for r in results)
    end = max(r["t_last"] for r in results)
    tokens = sum(r["usage"]["completion_tokens"] for r in results)
    after_first = sum(max(r["usage"]["completion_tokens"] - 1, 0) for r in results)
    return {
        "tps": tokens / (end - start),
        "decode_window_tps": after_first / (end - first) if end > first else 0.0,
        "ttft_s": stats.mean([r["t_first"] - r["t_send"] for r in results]),
        "completion_tokens": tokens,
        "streams": len(results),
    }


def prefill_metrics(result):
    ttft = result["t_first"] - result["t_send"]
    prompt_tokens = result["usage"]["prompt_tokens"]
    return {"prefill_tps": prompt_tokens / ttft, "ttft_s": ttft, "prompt_tokens": prompt_tokens}


class Point:
    """One measured point: its requests, the metric its precision is judged on, and its samples."""

    def __init__(self, name, kind, metric, params):
        self.name, self.kind, self.metric, self.params = name, kind, metric, params
        self.samples = []

    def values(self, metric=None):
        return [s[metric or self.metric] for s in self.samples]

    def summary(self):
        out = {"name": self.name, "kind": self.kind, "metric": self.metric, "params": self.params,
               "samples": self.samples}
        for metric in sorted(self.samples[0]) if self.samples else []:
            if isinstance(self.samples[0][metric], (int, float)):
                m, half = stats.ci95(self.values(metric))
                out[metric] = {"mean": m, "ci95": half if half != float("inf") else None}
        return out


class Bench:
    def __init__(self, url, model, options, log=print):
        self.url, self.model, self.o, self.log = url.rstrip("/"), model, options, log
        self.chars_per_token = CHARS_PER_TOKEN
        self.can_tokenize = True  # until the server answers /tokenize with anything but 200
        self.offset = 0
        self.requests = 0

    # -- requests ------------------------------------------------------------------------------------

    def body(self, messages, max_tokens, reasoning, fixed=True):
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
                "chat_template_kwargs": {"thinking": bool(reasoning), "enable_thinking": bool(reasoning)}}
        if fixed:  # exactly max_tokens tokens, so every sample does the same work
            body.update(min_tokens=max_tokens, ignore_eos=True)
        return body

    async def prefill_prompt(self, tokens):
        """Messages of about ``tokens`` prompt tokens from a fresh stretch of source text. Where the server counts
        tokens (/tokenize), the text is cut to its count, within about 1%; elsewhere by the running
        characters-per-token ratio, which a stretch of denser text misses by 10-15%."""
        tag = uuid.uuid4().hex  # the same first line in the prompt counted and the prompt sent
        messages = prompts.prefill_messages(tokens, self.chars_per_token, self.offset, tag)
        for _ in range(3 if self.can_tokenize else 0):  # a few rounds: the first line and chat template do not scale
            counted = await client.count_tokens(self.url, self.model, messages, self.o.api_key)
            if not counted:
                self.can_tokenize = False
                break
            if abs(counted - tokens) <= tokens // 100:
                break
            self.chars_per_token *= tokens / counted
            messages = prompts.prefill_messages(tokens, self.chars_per_token, self.offset, tag)
        return messages

    async def send(self, bodies):
        self.requests += len(bodies)
        try:
            return await asyncio.gather(*(client.chat_stream(self.url, b, self.o.request_timeout, self.o.api_key)
                                          for b in bodies))
        except (TimeoutError, client.RequestError, OSError) as exc:
            raise BenchError("a request failed: %s" % exc) from exc

    async def idle(self):
        """Wait until the engine runs nothing; return its finished-request counter."""
        if not self.o.idle_gate:
            return None
        deadline = time.monotonic() + self.o.idle_timeout
        while True:
            try:
                running, waiting, finished = await client.engine_load(self.url)
            except (client.RequestError, OSError) as exc:
                raise BenchError("cannot read %s/metrics (%s). Fix: point --url at the engine, or pass "
                                 "--no-idle-gate to sample without knowing whether it is idle" % (self.url, exc)) \
                    from exc
            if running == 0 and waiting == 0:
                return finished
            if time.monotonic() > deadline:
                raise BenchError("the engine stayed busy for %d s (running %d, waiting %d): someone else is using it"
                                 % (self.o.idle_timeout, running, waiting))
            await asyncio.sleep(0.2)

    async def sample(self, bodies):
        """Send one wave when the engine is idle; repeat it when foreign requests overlapped it."""
        for _ in range(self.o.overlap_retries + 1):
            before = await self.idle()
            results = await self.send(bodies)
            if before is None:
                return results
            after = (await client.engine_load(self.url))[2]
            if after - before <= len(bodies):
                return results
            self.log("  a foreign request overlapped the sample (%d finished, %d sent): repeating" % (
                after - before, len(bodies)))
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

    def decode_points(self):
        points = []
        for kind in self.o.prompts:
            for reasoning in self.o.reasoning:
                for c in self.o.concurrency:
                    name = "decode/%s/%s/c%d" % (kind, "think" if reasoning else "nothink", c)
                    points.append(Point(name, "decode", "tps", {"prompt": kind, "reasoning": reasoning,
                                                                "concurrency": c, "max_tokens": self.o.max_tokens}))
        return points

    def prefill_points(self):
        return [Point("prefill/%d" % n, "prefill", "prefill_tps", {"tokens": n}) for n in self.o.prefill_lengths]

    async def measure(self, point):
        p = point.params
        if point.kind == "decode":
            bodies = [self.body(prompts.decode_messages(p["prompt"], s), p["max_tokens"], p["reasoning"])
                      for s in range(p["concurrency"])]
            return decode_metrics(await self.sample(bodies))
        self.offset += 7919  # a different stretch of text every time, besides the unique first line
        messages = await self.prefill_prompt(p["tokens"])
        result = (await self.sample([self.body(messages, 1, False, fixed=False)]))[0]
        got = result["usage"]["prompt_tokens"]
        self.chars_per_token *= p["tokens"] / max(got, 1)  # aim the next prompt closer to the length asked
        return prefill_metrics(result)

    async def sampled(self, points, deadline):
        for point in points:  # warm-up round: compiles, caches, clocks; discarded
            await self.measure(point)
        rounds = 0
        while True:
            todo = [p for p in points if not stats.precise_enough(p.values(), self.o.precision, self.o.min_samples,
                                                                  self.o.max_samples)]
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
                "%s %.1f" % (p.name, stats.mean(p.values())) for p in sorted(todo, key=lambda p: p.name))))
        return [p.summary() for p in points]

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
        return {"tokens": results[0]["prompt_tokens"], "runs": results,
                "speedup": results[0]["ttft_s"] / stats.mean([r["ttft_s"] for r in results[1:]])}

    async def run(self, task):
        """Every selected suite in order; the quality gate first, stopping the run when it fails."""
        out = {"suites": list(self.o.suites)}
        deadline = time.monotonic() + self.o.time_budget
        if "quality" in self.o.suites:
            self.log("quality gate: %s, %d runs" % (task["name"], self.o.quality_runs))
            out["quality"] = await self.quality_gate(task)
            if not out["quality"]["passed"]:
                out["stopped"] = "the quality gate failed"
                return out
        points = []
        if "decode" in self.o.suites:
            points += self.decode_points()
        if "prefill" in self.o.suites:
            points += self.prefill_points()
        if points:
            self.log("sampling %d points (precision %.1f%%, %d-%d samples)" % (
                len(points), self.o.precision * 100, self.o.min_samples, self.o.max_samples))
            out["points"] = await self.sampled(points, deadline)
        if "prefix" in self.o.suites:
            self.log("prefix replay: %d tokens, cold then two replays" % self.o.prefix_length)
            out["prefix"] = await self.prefix_replay(self.o.prefix_length)
        out["requests"] = self.requests
        return out
