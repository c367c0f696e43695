"""The reference a run is compared with: an earlier bench.json, or the seeds' published figures.

``--compare`` alone (or ``--compare seed``) takes the seeds' figures for the run's shape from
references/seed.yml, the set that shape defaults to; ``--compare seed:SET`` names the set (r6, r5o, r5l, ...);
``--compare PATH`` an earlier run; ``--compare none`` skips the comparison.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ds41f.bench import report

SEED_FILE = Path(__file__).resolve().parent / "references" / "seed.yml"
DEFAULT_SHAPE = "tp4-ring"  # the seeds' four-node ring, which most published figures are for


class ReferenceError(ValueError):
    """A reference that cannot be used; the message names what and the fix."""


def seed_data():
    return yaml.safe_load(SEED_FILE.read_text())


def load(choice, shape):
    """The reference for ``--compare CHOICE`` on a run of ``shape`` (None when unknown); None for no comparison."""
    if choice in (None, "none"):
        return None
    if choice == "seed" or choice.startswith("seed:"):
        return seed(choice.partition(":")[2] or None, shape)
    data = report.load(choice)
    meta = data.get("meta", {})
    ident = dict(data.get("identity") or {})
    for field in ("model", "shape"):  # reports older than the identity table have them in meta
        ident.setdefault(field, meta.get(field))
    return {"kind": "run", "label": choice, "points": report.reference_points(data), "meta": meta,
            "identity": ident, "notes": []}


def seed(set_name, shape):
    data = seed_data()
    notes = []
    if shape is None:
        shape = DEFAULT_SHAPE
        notes.append("the run's shape is unknown (no --shape or --inventory): compared with the seeds' %s "
                     "figures" % shape)
    set_name = set_name or data["default_set"].get(shape)
    if set_name not in data["sets"]:
        raise ReferenceError("--compare seed:%s: no such set. Fix: one of %s" % (set_name, ", ".join(data["sets"])))
    figures = data["sets"][set_name]["shapes"].get(shape)
    if not figures:
        have = [s for s, sets in ((s, [n for n, v in data["sets"].items() if s in v["shapes"]])
                                  for s in data["default_set"]) if set_name in sets]
        raise ReferenceError("the seed set %s has no figures for shape %s. Fix: --shape one of %s, or another set"
                             % (set_name, shape, ", ".join(have) or "none"))
    ident = {"model": data["model"]["name"], "shape": shape, "release": data["sets"][set_name]["release"]}
    return {"kind": "seed", "label": "seed %s, %s" % (set_name, shape), "set": set_name, "shape": shape,
            "what": data["sets"][set_name]["what"], "figures": figures, "meta": {"shape": shape},
            "identity": ident, "notes": notes}
