"""Device kinds: which entry of thresholds.yml a GPU gets, and the architecture its kernels are built for.

Pure functions over plain data, so the threshold logic is tested without a GPU.
"""

from __future__ import annotations

import os

import yaml

THRESHOLDS_FILE = os.path.join(os.path.dirname(__file__), "thresholds.yml")


def load(path=None):
    """The ``kinds`` of a thresholds file (the packaged one by default)."""
    with open(path or THRESHOLDS_FILE) as handle:
        data = yaml.safe_load(handle)
    if data.get("schema") != 1 or "default" not in data.get("kinds", {}):
        raise ValueError("%s: expected schema 1 with a 'default' kind" % (path or THRESHOLDS_FILE))
    return data["kinds"]


def match(kinds, name, capability):
    """The kind a device belongs to: the first whose names or capabilities match, else 'default'.

    ``name`` is the CUDA device name, ``capability`` a (major, minor) pair.
    """
    cap = "%d.%d" % tuple(capability)
    for kind, entry in kinds.items():
        if kind == "default":
            continue
        rule = entry.get("match") or {}
        if any(part.lower() in name.lower() for part in rule.get("names", [])):
            return kind
        if cap in [str(c) for c in rule.get("capabilities", [])]:
            return kind
    return "default"


def arch_for(capability):
    """The target a compute capability compiles for: the 'a' variants where wgmma or SM12x MMAs need them."""
    major, minor = capability
    arch = "sm_%d%d" % (major, minor)
    return arch + "a" if major in (9, 10, 12) else arch


def resolve(kinds, name, capability, kind=None):
    """(kind name, its entry with ``arch`` filled in) for a device, or for ``kind`` when one is forced."""
    kind = kind or match(kinds, name, capability)
    if kind not in kinds:
        raise ValueError("unknown device kind %r (known: %s)" % (kind, ", ".join(sorted(kinds))))
    entry = dict(kinds[kind])
    if not entry.get("arch"):
        entry["arch"] = arch_for(capability)
    return kind, entry
