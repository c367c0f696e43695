"""Rotating the API key changes it (serve_rotate_key): deleting the key file brings the running engine's key back,
a rotation writes a new one whatever the file and the engine hold, and a running engine started with another key
than the file's is a row whose fix is the rotation. The module runs as Ansible runs it; docker is a small script."""

from __future__ import annotations

import json

from tests.unit.host.test_single_call_modules import held_key, program, run
from tests.unit.serve.test_preflight import fit_nodes
from tests.unit.serve.test_preflight import run as preflight


def engine_with_key(tmp_path, key):
    env = json.dumps(["PATH=/usr/bin", "VLLM_API_KEY=" + key])
    return program(tmp_path / "bin", "docker", "[ \"$1\" = inspect ] && [ \"$4\" = spark-ds41f ] && echo '%s'\n"
                   % env).parent


def test_a_rotation_writes_a_new_key_the_running_engine_does_not_bring_back(tmp_path):
    key_file = tmp_path / "serve" / "api-key.env"
    run(tmp_path, "api_key_file", {"path": str(key_file)})
    old = held_key(key_file)
    docker = engine_with_key(tmp_path, old)
    args = {"path": str(key_file), "container": "spark-ds41f"}
    key_file.unlink()  # deleting the file is no rotation: the running engine's key comes back
    run(tmp_path, "api_key_file", args, path=docker)
    assert held_key(key_file) == old
    planned = run(tmp_path, "api_key_file", dict(args, rotate=True), check_mode=True, path=docker)
    assert planned["changed"] and held_key(key_file) == old
    assert planned["drift"][0]["expected"] == "a new key (serve_rotate_key)"
    assert planned["drift"][0]["object"] == {"kind": "file", "name": str(key_file)}
    done = run(tmp_path, "api_key_file", dict(args, rotate=True), path=docker)
    new = held_key(key_file)
    assert done["changed"] and len(new) == 48 and new != old and new not in json.dumps(done)
    # until every rank starts anew, the running head answers to the old key: the doctor's row says so
    seen = run(tmp_path, "api_key_file", args, check_mode=True, path=docker)
    assert not seen["changed"] and seen["drift"] == [{
        "setting": "spark-ds41f API key", "expected": "the key in %s" % key_file,
        "found": "another key (it started before the key changed)",
        "fix": "ds41f run serve -e '{\"serve_rotate_key\": true}' (a new key, every rank started anew)",
        "object": {"kind": "container", "name": "spark-ds41f"}}]
    assert old not in json.dumps(seen) and new not in json.dumps(seen)
    assert not run(tmp_path, "api_key_file", args, check_mode=True, path=engine_with_key(tmp_path, new))["drift"]


def test_a_rotation_with_a_recipe_key_writes_the_recipes_key(tmp_path):
    key_file = tmp_path / "serve" / "api-key.env"
    run(tmp_path, "api_key_file", {"path": str(key_file)})
    done = run(tmp_path, "api_key_file", {"path": str(key_file), "recipe_key": "recipe-key-rotated-0001",
                                          "rotate": True})
    assert done["changed"] and held_key(key_file) == "recipe-key-rotated-0001"


def test_a_rotation_starts_every_rank_anew_even_where_each_runs_its_spec(recipe):
    _, nodes = fit_nodes(recipe)
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    problems, plan = preflight(c, nodes)
    assert not problems and plan["start"] is False  # every rank runs its spec: nothing to start
    problems, plan = preflight(c, nodes, restart=True)
    assert plan["start"] is True and plan["replacing"] == [n["name"] for n in nodes] and problems  # needs consent...
    problems, plan = preflight(c, nodes, restart=True, replace=True)
    assert not problems and plan["start"] is True  # ...which the rotation gives (roles/serve/vars: serve__consent)
