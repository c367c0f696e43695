"""The API key with SGLang: the head's spec mounts a root-only --config file, the command never holds the key, and
a vLLM spec is what it was (its key still comes from the env file)."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch
from ansible_collections.dgxspark.ds41f.plugins.module_utils.engines import sglang

from .conftest import cluster, load_recipe
from .sglang_recipe import render_all, sglang_values
from .test_launch import node_vars

CONFIG_MOUNT = "/etc/ds41f/serve/api-key.yaml:/run/ds41f/api-key.yaml:ro"


def test_the_head_reads_its_key_from_a_mounted_config_file():
    specs = render_all(sglang_values(), cluster("tp4-ring"))  # serve_api_key_required unset: the role's true
    head, workers = specs[0], specs[1:]
    assert head["env"]["EXTRA_SGLANG_ARGS"].endswith("--config %s" % sglang.KEY_CONFIG)
    assert head["command"].server_argv[-2:] == ["--config", sglang.KEY_CONFIG]
    assert CONFIG_MOUNT in head["mounts"] and head["api_key_config"] == "/etc/ds41f/serve/api-key.yaml"
    for spec in specs:
        assert "--api-key" not in spec["command"].server_argv and "API_KEY" not in spec["env"]
    for spec in workers:  # only the head serves the API
        assert "--config" not in spec["env"]["EXTRA_SGLANG_ARGS"] and "api_key_config" not in spec
        assert not [m for m in spec["mounts"] if "api-key" in m]


def test_the_state_dir_and_no_key():
    values = dict(sglang_values(), serve_state_dir="/srv/keys/", serve_api_key_required=True)
    head = render_all(values, cluster("tp4-ring"))[0]
    assert "/srv/keys/api-key.yaml:/run/ds41f/api-key.yaml:ro" in head["mounts"]
    open_api = render_all(dict(values, serve_api_key_required=False), cluster("tp4-ring"))[0]
    assert "--config" not in open_api["env"]["EXTRA_SGLANG_ARGS"] and "api_key_config" not in open_api
    assert open_api["labels"]["ds41f.recipe"] != head["labels"]["ds41f.recipe"]


def test_docker_run_passes_the_env_file_to_vllm_only():
    sg_head = render_all(sglang_values(), cluster("tp4-ring"))[0]
    argv = launch.docker_run(sg_head, api_key_file="/etc/ds41f/serve/api-key.env")
    assert "/etc/ds41f/serve/api-key.env" not in argv
    assert argv[argv.index(CONFIG_MOUNT) - 1] == "--volume"
    c = cluster("tp4-ring")
    recipe = launch.recipe_from_vars(load_recipe())
    shape = c.groupvars()["spark_shape"]
    vllm_head = launch.render(recipe, shape, node_vars(c, "dgx1"), {"nodes": 4, "head_address": c.head.address})
    argv = launch.docker_run(vllm_head, api_key_file="/etc/ds41f/serve/api-key.env")
    assert argv[argv.index("/etc/ds41f/serve/api-key.env") - 1] == "--env-file"


def test_a_vllm_spec_ignores_the_key_settings():
    c = cluster("tp4-ring")
    shape = c.groupvars()["spark_shape"]
    base = load_recipe()
    rendered = []
    for extra in ({}, {"serve_api_key_required": False, "serve_state_dir": "/srv/keys"}):
        recipe = launch.recipe_from_vars(dict(base, **extra))
        rendered.append(launch.render(recipe, shape, node_vars(c, "dgx1"), {"nodes": 4,
                                                                            "head_address": c.head.address}))
    assert rendered[0] == rendered[1]  # labels included: a running vLLM engine still matches its spec
    assert "api_key_config" not in rendered[0]


def test_the_key_flags_are_refused_in_serve_args():
    values = dict(sglang_values(), serve_args=sglang_values()["serve_args"] + ["--api-key", "plain-text"])
    with pytest.raises(launch.LaunchError, match="--api-key is rendered .*serve_api_key_required"):
        render_all(values, cluster("tp4-ring"))
