"""Shared helpers: the recipe as group_vars/all holds it, and every shape's cluster."""

from pathlib import Path

import jinja2
import jinja2.nativetypes
import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology

ROOT = Path(__file__).resolve().parents[3]


def load_recipe(*extra_files):
    """group_vars/all/*.yml (plus ``extra_files``), with their Jinja references resolved as Ansible would (the
    inventory's site values as ``cluster()`` builds them)."""
    values = {"spark_management_network": "192.168.1.0/24", "spark_head_address": "192.168.1.11"}
    for path in sorted((ROOT / "group_vars" / "all").glob("*.yml")) + [Path(p) for p in extra_files]:
        values.update(yaml.safe_load(path.read_text()) or {})
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)  # a list stays a list
    env.globals["lookup"] = lambda *args, **kwargs: ""  # the lab's lookup('env', ...): empty outside Ansible

    def resolve(value):
        if isinstance(value, str) and "{{" in value:
            return env.from_string(value).render(**values)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for _ in range(3):  # references of references
        values = {k: resolve(v) for k, v in values.items()}
    return values


def cluster(shape):
    count = topology.SHAPES[shape].nodes
    return topology.build({
        "shape": shape,
        "nodes": [{"name": "dgx%d" % (i + 1), "address": "192.168.1.%d" % (11 + i)} for i in range(count)],
    })


@pytest.fixture
def recipe():
    return load_recipe()
