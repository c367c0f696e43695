"""Rows of docs/stages/serve.md's seed 001 table that no other test covers: the weights pin and the container
settings of seed line 79 (``--privileged``, ``--gpus all``, ``--ipc host``, ``--ulimit memlock=-1``) in the SGLang
head's docker run."""

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch

from .conftest import cluster
from .sglang_recipe import render_all, seed_text, sglang_values


def test_the_weights_pin_is_the_seeds():
    values = sglang_values()
    line = next(line for line in seed_text().splitlines() if line.startswith("| Weights |"))
    assert values["model_repo"] in line and values["model_repo"] == "deepseek-ai/DeepSeek-V4.1-Flash"
    assert re.search(r"\b%d GiB, %d shards\b" % (values["model_size_gib"], values["model_shards"]), line)


def test_the_container_settings_the_seed_gives():
    argv = launch.docker_run(render_all(sglang_values(), cluster("tp4-ring"))[0])
    pairs = list(zip(argv[:-1], argv[1:], strict=True))
    assert ("--gpus", "all") in pairs and ("--ipc", "host") in pairs
    assert [v for k, v in pairs if k == "--ulimit" and v.startswith("memlock=")] == ["memlock=-1:-1"]
    assert "--privileged" in argv  # as the launcher runs its containers
    docker_line = next(line for line in seed_text().splitlines() if line.startswith("| Docker |"))
    assert "--gpus all" in seed_text() and "--ipc host" in docker_line and "--ulimit memlock=-1" in docker_line
    assert "--privileged" in docker_line
