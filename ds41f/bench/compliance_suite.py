"""Running the compliance suite (ds41f/bench/compliance.py) against the server; outputs are kept under
``<report>/outputs/compliance-<arm>/<record>.txt``."""

from __future__ import annotations

from pathlib import Path

from ds41f.bench import client, compliance, runner


async def run(bench):
    try:
        import jsonschema  # noqa: F401 - the judge's validator, checked before anything is sent
    except ImportError:
        bench.log("  compliance not run: python-jsonschema is missing. Fix: pip install -e .[bench]")
        return {"not_run": "python-jsonschema is missing. Fix: pip install -e .[bench]"}
    items = bench.opt("compliance_items", 12)
    max_tokens = bench.opt("compliance_max_tokens", 4096)
    records = list(compliance.RECORDS)[:bench.opt("compliance_records", 8)]
    out_dir = Path(bench.opt("output_dir", ".")) / "outputs"
    arms = {}
    for arm in compliance.ARMS:
        folder = out_dir / ("compliance-%s" % arm)
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for record in records:
            body = compliance.body(bench.model, record, items, max_tokens, arm)
            try:
                result = (await bench.sample([body]))[0]
            except runner.BenchError as exc:  # a server that refuses response_format (HTTP 400) is a result here
                if not isinstance(exc.__cause__, client.RequestError):
                    raise
                rows.append({"record": record, "passed": False, "why": "the server refused it: %s" % exc,
                             "finish_reason": None})
                continue
            (folder / ("%s.txt" % record)).write_text(result["text"])
            ok, why = compliance.judge(result["text"], result["finish_reason"], record, items)
            rows.append({"record": record, "passed": ok, "why": why, "finish_reason": result["finish_reason"],
                         "completion_tokens": result["usage"]["completion_tokens"]})
        passed = sum(r["passed"] for r in rows)
        bench.log("  compliance %s: %d of %d passed" % (arm, passed, len(rows)))
        arms[arm] = {"requests": rows, "passed": passed, "total": len(rows), "outputs": str(folder)}
    return {"items": items, "max_tokens": max_tokens, "arms": arms}
