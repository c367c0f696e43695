"""The recorded production launches (tests/fixtures/release/) beside a site's rendered ones, and the reviewed list of
their differences (tests/fixtures/release/differences.yml). Used by `ds41f render --compare` and the conformance
tests; the comparison itself is plugins/module_utils/conformance.py."""

from __future__ import annotations

import fnmatch
import json
from functools import cache

import yaml

from ds41f import paths

FIXTURES = paths.ROOT / "tests" / "fixtures" / "release"
REVIEWED = FIXTURES / "differences.yml"
# The recorded launch each engine is compared with.
RECORDS = {"vllm": "spark-ds41f-tp4-ring.json", "sglang": "sglang-tp4-ring.yml"}


def conformance():
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import conformance as module

    return module


@cache
def fixture(name):
    text = (FIXTURES / name).read_text()
    return json.loads(text) if name.endswith(".json") else yaml.safe_load(text)


def reviewed():
    return fixture("differences.yml")["differences"]


def shape_of(spec):
    return spec["labels"]["ds41f.shape"].split()[0]


def recorded(engine, shape):
    """The recorded launch of ``shape`` as items: spark-ds41f's profile with seed 000's 1030 changes (vLLM), or
    seed 001's launcher on the ring (SGLang)."""
    c = conformance()
    if engine == "sglang":
        record = fixture(RECORDS["sglang"])
        pairs = c.docker_pairs(record["docker"]) + [("--volume", "host:%s" % m) for m in record["mounts"]]
        pairs += [("--env", "%s=%s" % kv) for kv in record["env"].items()]
        return dict(c.launch_items(record["entrypoint"], [], pairs), image=record["image"])
    profile, release = fixture(RECORDS["vllm"]), fixture("spark-ds41f-1030.yml")
    container = profile["container"]
    pairs = c.docker_pairs(container["docker_run_args"])
    pairs += [("--volume", "%s:%s:%s" % tuple(m)) for m in container["mounts"]]
    pairs += [("--env", "%s=%s" % kv) for kv in profile["environment"].items()]
    argv = profile["serve_args"] + ["--master-addr", profile["distributed"]["master_addr"],
                                    "--master-port", profile["distributed"]["master_port"]]
    items = c.launch_items(None, argv, pairs)
    items.update({"docker --name": container["name"], "image": container["image"]})
    return c.apply(c.apply(items, release["changes"]), release["shapes"].get(shape) or [])


def recorded_shapes(engine):
    return ["tp4-ring"] if engine == "sglang" else sorted(fixture("spark-ds41f-1030.yml")["shapes"])


def rendered(spec, env_files=None):
    """The rendered launch of one rank as items (its docker run words, env files' contents included)."""
    c = conformance()
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch

    return dict(c.rendered_items(launch.docker_run(spec), spec, env_files), image=spec["image"])


def engine_of(spec):
    return spec.get("engine") or "vllm"


def compare(specs, env_files=None):
    """{ranks: [(rank, shape, unlisted, listed)], stale: [entries]} for one site's specs (one per rank);
    ``env_files``: per rank, path -> {variable: value}."""
    c = conformance()
    entries, ranks, matched = reviewed(), [], set()
    for i, spec in enumerate(specs):
        engine, shape = engine_of(spec), shape_of(spec)
        found = c.differences(recorded(engine, shape), rendered(spec, (env_files or [None] * len(specs))[i]))
        unlisted, listed = [], []
        for diff in found:
            entry = match(entries, engine, shape, diff["item"])
            (listed.append((diff, entry)) if entry else unlisted.append(diff))
            if entry:
                matched.add(id(entry))
        label = shape if shape in recorded_shapes(engine) else "%s (no recorded %s launch of this shape: compared " \
            "with tp4-ring's)" % (shape, engine)
        ranks.append((spec["rank"], label, unlisted, listed))
    shapes = {(engine_of(s), shape_of(s)) for s in specs}
    stale = [e for e in entries if id(e) not in matched and any(
        e["engine"] == engine and shape in e["shapes"] for engine, shape in shapes)]
    return {"ranks": ranks, "stale": stale}


def match(entries, engine, shape, item):
    """The reviewed entry for one difference (its item may be a pattern: ``env DSV41_LOOP_*``)."""
    for entry in entries:
        patterns = entry.get("items") or [entry["item"]]
        if entry["engine"] == engine and shape in entry["shapes"] and any(
                fnmatch.fnmatchcase(item, p) for p in patterns):
            return entry
    return None


def show(value, width=70):
    text = "(absent)" if value is None else repr(value) if value == "" else str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def report(result, names=None):
    """The comparison as lines for people (a rank after the first of its shape shows only what is not the same as
    there; each reviewed reason once, numbered, at the end), and whether it passes: nothing unlisted, nothing
    stale."""
    lines, ok, reasons, first = [], True, [], {}
    for rank, shape, unlisted, listed in result["ranks"]:
        name = (names or {}).get(rank, "rank %s" % rank)
        rows = [(d, None) for d in unlisted] + listed
        seen = first.setdefault(shape, (name, {(d["item"], d["recorded"], d["rendered"]) for d, _ in rows}))
        same = seen[0] != name
        lines.append("# %s: rank %s, %s: %d differences from the recorded launch, %d not reviewed%s" % (
            name, rank, shape, len(rows), len(unlisted), "; the same as %s except:" % seen[0] if same else ""))
        for diff, entry in rows:
            if same and (diff["item"], diff["recorded"], diff["rendered"]) in seen[1] and entry:
                continue
            if entry is None:
                ok = False
                tag = "NOT REVIEWED"
            else:
                if entry not in reasons:
                    reasons.append(entry)
                tag = "[%d]" % (reasons.index(entry) + 1)
            lines.append("  %-12s %s: recorded %s, rendered %s" % (
                tag, diff["item"], show(diff["recorded"]), show(diff["rendered"])))
    if reasons:
        lines.append("# reviewed reasons (%s)" % REVIEWED.relative_to(paths.ROOT))
        lines += ["  [%d] %s (%s)" % (i + 1, e["reason"], e["source"]) for i, e in enumerate(reasons)]
    for entry in result["stale"]:
        ok = False
        lines.append("STALE %s (%s, %s): listed, but no rank differs there any more. Fix: remove it from %s" % (
            entry.get("item") or ", ".join(entry["items"]), entry["engine"], ", ".join(entry["shapes"]),
            REVIEWED.relative_to(paths.ROOT)))
    return lines, ok
