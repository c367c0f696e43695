"""Seed 001's SGLang recipe as the ring4-sglang example site selects it (shared by the test_sglang_* files)."""

import re
from pathlib import Path

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch

from .conftest import ROOT, load_recipe
from .test_launch import node_vars

SITE_VARS = ROOT / "inventories" / "ring4-sglang" / "group_vars" / "spark_cluster.yml"
SEED = ROOT.parent / "shared" / "seeds" / "001_9c6b90048b8892ca.txt"
WHOLE = re.compile(r"^\{\{\s*(\w+)\s*\}\}$")


def sglang_values():
    """group_vars/all with the site's group_vars over it; a whole-value reference keeps its list or dict."""
    values = load_recipe()
    for key, value in (yaml.safe_load(SITE_VARS.read_text()) or {}).items():
        match = WHOLE.match(value) if isinstance(value, str) else None
        values[key] = values[match.group(1)] if match else value
    return values


def render_all(values, c):
    recipe = launch.recipe_from_vars(values)
    shape = c.groupvars()["spark_shape"]
    return [launch.render(recipe, shape, node_vars(c, n.name), {"nodes": len(c.nodes), "head_address": c.head.address})
            for n in c.nodes]


def seed_text():
    assert SEED.exists(), "seed 001 is not at %s (the shared/ folder beside the repository)" % SEED
    return Path(SEED).read_text()
