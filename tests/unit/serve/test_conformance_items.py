"""A docker run line as items (plugins/module_utils/conformance.py): everything docker run decides is an item, and a
repeat is a difference even where the last value agrees."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import conformance

BASE = ["docker", "run", "-d", "--name", "e", "--network", "host", "-v", "/srv/m:/models:ro", "--label", "a=1",
        "-e", "X=1", "img:tag", "/models", "--max-num-seqs", "8"]


def items(words, entrypoint=("vllm", "serve"), env_files=None):
    return conformance.run_items(words, list(entrypoint), env_files)


def changed(words):
    return [d["item"] for d in conformance.differences(items(BASE), items(words))]


def test_the_base_line_as_items():
    got = items(BASE)
    assert got["image"] == "img:tag" and got["entrypoint"] == "vllm serve"
    assert got["arg (positional)"] == "/models" and got["arg --max-num-seqs"] == "8"
    assert got["mount /models"] == "/srv/m ro" and got["label a"] == "1" and got["env X"] == "1"
    assert got["docker -d"] == "" and got["docker --name"] == "e"
    assert got["docker --restart"] == "no"  # docker's default, where the line names none


def test_a_flag_given_twice_is_a_difference_though_the_last_value_agrees():
    twice = BASE[:-2] + ["--max-num-seqs", "4", "--max-num-seqs", "8"]
    assert changed(twice) == ["arg --max-num-seqs"]
    assert items(twice)["arg --max-num-seqs"] == "4 | 8 (given 2 times: the last wins)"
    assert changed(BASE[:2] + ["--name", "f"] + BASE[2:]) == ["docker --name"]
    assert changed(BASE[:2] + ["-e", "X=2"] + BASE[2:]) == ["env X"]


def test_a_repeated_positional_argument_is_a_difference():
    assert changed(BASE[:-2] + ["/models", "--max-num-seqs", "8"]) == ["arg (positional)"]
    assert changed(BASE[:-3] + ["/other", "--max-num-seqs", "8"]) == ["arg (positional)"]


def test_labels_mount_sources_and_modes_and_the_image_by_id_or_digest():
    assert changed([w.replace("a=1", "a=2") for w in BASE]) == ["label a"]
    assert changed([w.replace("/srv/m:", "/srv/n:") for w in BASE]) == ["mount /models"]
    assert changed([w.replace(":ro", ":rw") for w in BASE]) == ["mount /models"]
    for image in ("sha256:" + "0" * 64, "img@sha256:" + "1" * 64):
        assert changed([image if w == "img:tag" else w for w in BASE]) == ["image"]
        assert items([image if w == "img:tag" else w for w in BASE])["image"] == image


def test_an_entrypoint_override_and_a_restart_policy():
    over = BASE[:2] + ["--entrypoint", "python3"] + BASE[2:]
    assert changed(over) == ["entrypoint"] and items(over)["entrypoint"] == "python3"
    assert changed(BASE[:2] + ["--restart", "no"] + BASE[2:]) == []  # docker's own default, said
    assert changed(BASE[:2] + ["--restart", "always"] + BASE[2:]) == ["docker --restart"]


def test_env_files_and_engine_arguments_in_a_variable():
    files = {"/e": {"Y": "2", "X": "0"}}
    got = items(BASE[:2] + ["--env-file", "/e"] + BASE[2:], env_files=files)
    assert got["env Y"] == "2" and got["docker --env-file /e"] == ""
    assert got["env X"] == "0 | 1 (given 2 times: the last wins)"  # the file's, then --env's
    sg = items(BASE[:2] + ["-e", "EXTRA_SGLANG_ARGS=--a 1 --b"] + BASE[2:])
    assert sg["env EXTRA_SGLANG_ARGS --a"] == "1" and sg["env EXTRA_SGLANG_ARGS --b"] == ""


def test_site_values_compare_by_presence():
    got = items(BASE[:2] + ["-e", "NCCL_IB_HCA=mlx5_0", "--ulimit", "stack=1:2"] + BASE[2:])
    assert got["env NCCL_IB_HCA"] == conformance.SITE and got["docker --ulimit stack"] == "1:2"
