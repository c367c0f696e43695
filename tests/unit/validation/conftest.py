"""Fixtures of the bad-input tests: a good site on documentation addresses, the recipe, and a guard that fails a test
which opened a connection or started a program."""

import copy
import functools
import socket
import subprocess

import jinja2
import jinja2.nativetypes
import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe, topology
from tests.conftest import ROOT

SPECS = recipe.load_role_specs(str(ROOT / "roles"), yaml.safe_load)


def good_site():
    """A tp4-ring on TEST-NET-1 (192.0.2.0/24): nothing there answers, whatever a bug might do."""
    return {"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp4-ring", "ssh_user": "ubuntu",
            "management_network": "192.0.2.0/24",
            "nodes": [{"name": "dgx%d" % i, "address": "192.0.2.%d" % (10 + i)} for i in range(1, 5)]}


@functools.lru_cache(maxsize=1)
def _recipe_files():
    found = {}
    for path in sorted((ROOT / "group_vars" / "all").glob("*.yml")):
        for key, value in (yaml.safe_load(path.read_text()) or {}).items():
            found[key] = ("group_vars/all/%s" % path.name, value)
    return found


def collection_recipe():
    """{name: (group_vars/all/<file>, value)} of the collection's recipe, as the validate action reads it (read
    once; each call gets its own copy)."""
    return copy.deepcopy(_recipe_files())


def host_values(site, overrides=None, extra=None):
    """Each node's variables as the play sees them: recipe < inventory group_vars < site vars: < -e."""
    cluster = topology.build(site)
    out = {}
    for node in cluster.nodes:
        values = {k: v for k, (_, v) in collection_recipe().items()}
        values.update(cluster.groupvars())
        values.update(overrides or {})
        values.update(cluster.extra_vars)
        values.update(extra or {})
        values.update(cluster.hostvars(node.name))
        out[node.name] = templated(values)
    return out


def templated(values):
    """Jinja references between variables resolved as Ansible's templating would (``{{ spark_management_network
    }}``); a reference to what only a role defines stays as written, as the validate action leaves it unchecked."""
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)  # a list stays a list

    def resolve(value):
        if isinstance(value, str) and "{{" in value:
            try:
                return env.from_string(value).render(**values)
            except (jinja2.UndefinedError, jinja2.TemplateError, TypeError):
                return value
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for _ in range(3):  # references of references
        values = {k: resolve(v) for k, v in values.items()}
    return values


def ssh_stub(folder):
    """An ssh that records its arguments and fails: (its path, the record file, empty while no host is contacted)."""
    record = folder / "ssh-calls"
    record.write_text("")
    ssh = folder / "ssh"
    ssh.write_text("#!/bin/sh\necho \"$@\" >> %s\nexit 255\n" % record)
    ssh.chmod(0o755)
    return ssh, record


@pytest.fixture
def no_contact(monkeypatch):
    """Records every connection and program start; the test asserts the record stays empty."""
    record = []

    def connect(self, address, *args):
        record.append(("connect", address))
        raise OSError("test: no connection allowed")

    class Popen:
        def __init__(self, argv, *args, **kwargs):
            record.append(("run", argv))
            raise OSError("test: no program may run")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    return record
