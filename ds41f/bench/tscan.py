"""seed 001's ``tscan``: outputs sampled at a temperature above 0, scanned for garbled text and errors.

From the seed (001_9c6b90048b8892ca.txt): "T > 0 garble scan" (line 111); "35 outputs: 0 garbled, 0 errors
(reference 0 of 35)" (line 33). The seed gives neither the temperature nor what makes an output garbled, so the
temperature is ``--tscan-temperature`` (the suite does not run without it) and garble is "not available": the
outputs are kept under ``outputs/tscan/`` for a person to read, and a request that fails fails the scan.
"""

from __future__ import annotations

from pathlib import Path

from ds41f.bench import client, prompts

OUTPUTS = 35  # seed 001 line 33
GARBLE = "not available: seed 001 does not define a garbled output (docs/bench.md)"


async def run(bench):
    temperature = bench.opt("tscan_temperature", None)
    if not temperature or temperature <= 0:
        why = "seed 001 gives T > 0 without a value. Fix: --tscan-temperature T"
        bench.log("  tscan not run: %s" % why)
        return {"passed": None, "why": "not run: %s" % why}
    folder = Path(bench.opt("output_dir", ".")) / "outputs" / "tscan"
    folder.mkdir(parents=True, exist_ok=True)
    n, errors, finish = bench.opt("tscan_outputs", OUTPUTS), [], {}
    for i in range(n):
        body = bench.body(prompts.decode_messages("prose", i), bench.o.max_tokens, False, fixed=False,
                          temperature=temperature)
        await bench.idle()
        bench.requests += 1
        try:
            result = await client.chat_stream(bench.url, body, bench.o.request_timeout, bench.o.api_key)
        except (client.RequestError, OSError, TimeoutError) as exc:
            errors.append({"output": i + 1, "error": str(exc)[:300]})
            continue
        (folder / ("output%02d.txt" % (i + 1))).write_text(result["text"])
        finish[str(result["finish_reason"])] = finish.get(str(result["finish_reason"]), 0) + 1
    passed = False if errors else None
    why = ("%d of %d requests failed" % (len(errors), n)) if errors else \
        "not judged: 0 errors in %d outputs; garbled %s" % (n, GARBLE)
    bench.log("  tscan: %s" % why)
    return {"temperature": temperature, "outputs": n, "errors": errors, "finish_reasons": finish,
            "garbled": GARBLE, "folder": str(folder), "passed": passed, "why": why}
