"""The recorded production launches (tests/fixtures/release/) beside a site's rendered ones, rank by rank, and the
reviewed list of their differences (tests/fixtures/release/differences.yml). Used by `ds41f render --compare` and
the conformance tests; the items themselves are plugins/module_utils/conformance.py.

A recorded launch is one source's launch at one commit, per rank (SOURCE.md): spark-ds41f's ring and triangle
profiles with the per-rank part its launcher adds, with seed 000's 1030 changes; the SGLang launcher's head and
worker launches on the ring, with seed 001's v2.4 changes. Every change names one item and the seed line it comes
from; a change whose item the record lacks is refused (a stale change would hide what it removed)."""

from __future__ import annotations

import json
from functools import cache

import yaml

from ds41f import paths

FIXTURES = paths.ROOT / "tests" / "fixtures" / "release"
REVIEWED = FIXTURES / "differences.yml"
# shape -> spark-ds41f's own profile of that shape (vLLM).
VLLM_RECORDS = {"tp4-ring": "spark-ds41f-tp4-ring.json", "tp3-triangle": "spark-ds41f-tp3-triangle.json"}
VLLM_RANKS = "spark-ds41f-ranks.yml"
VLLM_CHANGES = "spark-ds41f-1030.yml"
SGLANG_RECORD = "sglang-tp4-ring.yml"
SGLANG_CHANGES = "sglang-tp4-v2.4.yml"
SGLANG_SHAPES = ("tp4-ring",)


class RecordError(ValueError):
    """A recorded launch or a change to it that does not hold (a change to an item the record lacks)."""


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


def engine_of(spec):
    return spec.get("engine") or "vllm"


def recorded_shapes(engine):
    return list(SGLANG_SHAPES) if engine == "sglang" else sorted(VLLM_RECORDS)


def changes_of(engine, shape):
    """The seed's changes to the recorded launch of ``shape``, in order: every shape's, then the shape's own."""
    data = fixture(SGLANG_CHANGES if engine == "sglang" else VLLM_CHANGES)
    return list(data["changes"]) + list((data.get("shapes") or {}).get(shape) or [])


def apply(items, changes):
    """``items`` with the changes applied in order: ``{item, value}`` sets one item (``value: null`` removes it) and
    ``{rename: [old, new]}`` moves one. Removing or renaming an item the record lacks is a RecordError."""
    out = dict(items)
    c = conformance()
    for change in changes:
        if "rename" in change:
            old, new = change["rename"]
            if old not in out:
                raise RecordError("%s: renames %s, which the record lacks" % (change, old))
            out[new] = out.pop(old)
        elif change.get("value") is None:
            if change["item"] not in out:
                raise RecordError("%s: removes %s, which the record lacks" % (change, change["item"]))
            del out[change["item"]]
        else:
            item, value = change["item"], str(change["value"])
            out[item] = c.SITE if item in ("env %s" % k for k in c.SITE_ENV) else c._json(value)
    return out


def _vllm_words(shape, rank):
    """spark-ds41f's docker run words of one rank: bin/spark's layout (docker run -d --name, the profile's
    docker_run_args, every variable, the mounts, the image, serve_args and the rank's flags)."""
    profile, ranks = fixture(VLLM_RECORDS[shape]), fixture(VLLM_RANKS)
    container = profile["container"]
    env = dict(profile["environment"], **ranks["env_every_rank"])
    words = ["-d", "--name", container["name"]] + list(container["docker_run_args"])
    words += [w for key, value in sorted(env.items()) for w in ("--env", "%s=%s" % (key, value))]
    words += [w for source, target, mode in container["mounts"] for w in ("--volume", "%s:%s:%s" % (
        source, target, mode))]
    args = [a.format(rank=rank, master_port=profile["distributed"]["master_port"])
            for a in ranks["args_every_rank"] + (ranks["args_workers"] if rank else [])]
    return words + [container["image"]] + list(profile["serve_args"]) + args


def _sglang_words(rank):
    record = fixture(SGLANG_RECORD)
    part = record["head"] if rank == 0 else record["workers"]
    return [w.format(rank=rank) for w in part["docker"]] + [record["image"]] + list(part["command"])


@cache
def _recorded(engine, shape, rank):
    c = conformance()
    if engine == "sglang":
        items = c.run_items(_sglang_words(rank), fixture(SGLANG_RECORD)["entrypoint"])
    else:
        items = c.run_items(_vllm_words(shape, rank), fixture("base-image.yml")["entrypoint"])
    return json.dumps(apply(items, changes_of(engine, shape)))


def recorded(engine, shape, rank):
    """The recorded launch of ``rank`` on ``shape`` as items, the seed's changes applied."""
    return json.loads(_recorded(engine, shape, rank))


def compare_shape(engine, shape):
    """The recorded shape a rendered one is compared with: its own, else the engine's first (said in the report)."""
    shapes = recorded_shapes(engine)
    return shape if shape in shapes else shapes[0]


def matches(entry, engine, shape, rank, diff):
    """Whether the reviewed ``entry`` covers ``diff`` on this rank: its engine, shape, rank, item and the values it
    states (``recorded``/``rendered``, where given) must all hold."""
    if entry["engine"] != engine or shape not in entry["shapes"] or entry["item"] != diff["item"]:
        return False
    if entry.get("ranks") == "head" and rank != 0 or entry.get("ranks") == "workers" and rank == 0:
        return False
    return all(entry[side] == diff[side] for side in ("recorded", "rendered") if side in entry)


def compare(launches):
    """{ranks: [(rank, shape label, unlisted, listed)], stale: [entries]} for one site: ``launches`` holds per rank
    {spec, words (its docker run words), env_files (path -> {variable: value})}."""
    c = conformance()
    entries, ranks, matched = reviewed(), [], set()
    for launch in launches:
        spec = launch["spec"]
        engine, shape, rank = engine_of(spec), shape_of(spec), int(spec["rank"])
        against = compare_shape(engine, shape)
        rendered = c.run_items(launch["words"], spec.get("image_entrypoint"), launch.get("env_files"))
        unlisted, listed = [], []
        for diff in c.differences(recorded(engine, against, rank), rendered):
            entry = next((e for e in entries if matches(e, engine, against, rank, diff)), None)
            (listed.append((diff, entry)) if entry else unlisted.append(diff))
            if entry:
                matched.add(id(entry))
        label = against if against == shape else "%s (no recorded %s launch of this shape: compared with %s's)" % (
            shape, engine, against)
        ranks.append((rank, label, unlisted, listed))
    shapes = sorted({(engine_of(ln["spec"]), compare_shape(engine_of(ln["spec"]), shape_of(ln["spec"])))
                     for ln in launches})
    stale = [e for e in entries if id(e) not in matched and any(
        e["engine"] == engine and shape in e["shapes"] for engine, shape in shapes)]
    return {"ranks": ranks, "stale": stale, "records": shapes}


def record_lines(engine, shape):
    """What the recorded launch of ``shape`` is made of, and every item the seed's changes removed or renamed."""
    files = ([SGLANG_RECORD, SGLANG_CHANGES] if engine == "sglang" else [VLLM_RECORDS[shape], VLLM_RANKS,
                                                                         VLLM_CHANGES])
    changes = changes_of(engine, shape)
    removed = [c["item"] for c in changes if "rename" not in c and c.get("value") is None]
    renamed = ["%s -> %s" % tuple(c["rename"]) for c in changes if "rename" in c]
    return ["# recorded %s launch of %s: %s; %d changes of the seed, each with its line%s%s" % (
        engine, shape, ", ".join(files), len(changes), "; removed: %s" % ", ".join(removed) if removed else "",
        "; renamed: %s" % ", ".join(renamed) if renamed else "")]


def show(value, width=70):
    text = "(absent)" if value is None else repr(value) if value == "" else str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def report(result, names=None):
    """The comparison as lines for people (a rank after the first of its shape shows only what is not the same as
    there; each reviewed reason once, numbered, at the end; the count of reviewed differences), and whether it
    passes: nothing unlisted, nothing stale."""
    lines, ok, reasons, first = [], True, [], {}
    for engine, shape in result.get("records") or []:
        lines += record_lines(engine, shape)
    for rank, shape, unlisted, listed in result["ranks"]:
        name = (names or {}).get(rank, "rank %s" % rank)
        rows = [(d, None) for d in unlisted] + listed
        seen = first.setdefault(shape, (name, {(d["item"], d["recorded"], d["rendered"]) for d, _ in rows}))
        same = seen[0] != name
        lines.append("# %s: rank %s, %s: %d differences from the recorded launch, %d reviewed, %d not reviewed%s" % (
            name, rank, shape, len(rows), len(listed), len(unlisted),
            "; the same as %s except:" % seen[0] if same else ""))
        for diff, entry in sorted(rows, key=lambda row: row[0]["item"]):
            if same and (diff["item"], diff["recorded"], diff["rendered"]) in seen[1] and entry:
                continue
            if entry is None:
                ok = False
                tag = "NOT REVIEWED"
            else:
                key = (entry["reason"], entry["source"])
                if key not in reasons:
                    reasons.append(key)
                tag = "[%d]" % (reasons.index(key) + 1)
            lines.append("  %-12s %s: recorded %s, rendered %s" % (
                tag, diff["item"], show(diff["recorded"]), show(diff["rendered"])))
    if reasons:
        lines.append("# reviewed reasons (%s)" % REVIEWED.relative_to(paths.ROOT))
        lines += ["  [%d] %s (%s)" % (i + 1, reason.strip(), source) for i, (reason, source) in enumerate(reasons)]
    total = sum(len(listed) for _, _, _, listed in result["ranks"])
    lines.append("# %d reviewed differences over %d ranks" % (total, len(result["ranks"])))
    for entry in result["stale"]:
        ok = False
        lines.append("STALE %s (%s, %s%s): listed, but no rank differs so any more. Fix: remove it from %s, or "
                     "correct the values it states" % (entry["item"], entry["engine"], ", ".join(entry["shapes"]),
                                                       ", %s" % entry["ranks"] if entry.get("ranks") else "",
                                                       REVIEWED.relative_to(paths.ROOT)))
    return lines, ok
