"""`ds41f logs` and `--follow` show no secret the node knows, for every engine: the engine_log module (as Ansible
runs it on a node) and the very program `--follow` runs over ssh (redaction.py through `python3 -c`) read an engine
log that holds the vLLM key, a serve_env HF_TOKEN and SGLang's server_args line with its key, and return it
redacted. docker is a small script that prints what the real one prints."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import redaction
from ds41f.day2 import logs
from tests.unit.host.test_single_call_modules import program, run

VLLM_KEY = "0f3a9c1e5b7d2468ace013579bdf2468ace01357"
HF_TOKEN = "hf_abcdefghijklmnopqrstuvwx"
SGLANG_KEY = "sglang-key-5e8d1c7b"
LOG = [
    "INFO 12-07 10:00:00 api_server.py:1 vLLM API server version 0.32.0",
    "INFO 12-07 10:00:00 env VLLM_API_KEY=%s HF_TOKEN=%s" % (VLLM_KEY, HF_TOKEN),
    "[2026-12-07 10:00:00] server_args=ServerArgs(model_path='/models', api_key='%s', port=8000)" % SGLANG_KEY,
    "INFO 12-07 10:00:01 Starting vLLM server on http://0.0.0.0:8000",
    "WARNING request with header Authorization: Bearer %s refused" % VLLM_KEY,
]
SECRETS = (VLLM_KEY, HF_TOKEN, SGLANG_KEY)


@pytest.fixture
def node(tmp_path):
    """docker answering for the container spark-ds41f (its environment, its log, a follow), and the head's key files."""
    env = json.dumps(["PATH=/usr/bin", "VLLM_API_KEY=" + VLLM_KEY, "HF_TOKEN=" + HF_TOKEN, "TOKENIZERS_PARALLELISM=1"])
    log = tmp_path / "engine.log"
    log.write_text("\n".join(LOG) + "\n")
    docker = program(tmp_path / "bin", "docker", (
        'case "$1 $2" in\n'
        '  "container inspect") [ "$5" = spark-ds41f ] && echo \'%s\' || { echo "no such container" >&2; exit 1; };;\n'
        '  "logs --tail") [ "$4" = spark-ds41f ] && cat %s || { echo "No such container: $4" >&2; exit 1; };;\n'
        '  "logs --follow") cat %s; echo "$@" > %s;;\n'
        'esac\n') % (env, log, log, tmp_path / "followed"))
    (tmp_path / "api-key.env").write_text("VLLM_API_KEY=%s\n" % VLLM_KEY)
    (tmp_path / "api-key.yaml").write_text("api-key: %s\n" % SGLANG_KEY)
    return docker.parent, [str(tmp_path / "api-key.env"), str(tmp_path / "api-key.yaml")]


def unredacted(lines):
    return [line for line in lines for secret in SECRETS if secret in line]


def test_the_logs_module_returns_the_log_with_every_secret_the_node_knows_redacted(tmp_path, node):
    bin_dir, key_files = node
    done = run(tmp_path, "engine_log", {"container": "spark-ds41f", "lines": 50, "key_files": key_files},
               path=bin_dir)
    assert done["docker_rc"] == 0 and len(done["lines"]) == len(LOG) and unredacted(done["lines"]) == []
    assert done["lines"][0] == LOG[0] and done["lines"][3] == LOG[3]  # the rest as it was
    assert "api_key='(redacted)'" in done["lines"][2] and "HF_TOKEN=(redacted)" in done["lines"][1]
    assert not any(secret in json.dumps(done) for secret in SECRETS)


def test_a_worker_without_key_files_still_loses_its_containers_secrets_and_any_api_key(tmp_path, node):
    bin_dir, _ = node
    done = run(tmp_path, "engine_log", {"container": "spark-ds41f", "lines": 50}, path=bin_dir)
    assert unredacted(done["lines"]) == []  # the SGLang key went by its api_key assignment


def test_no_container_is_dockers_error_not_a_log_nor_a_failure(tmp_path, node):
    bin_dir, key_files = node
    done = run(tmp_path, "engine_log", {"container": "other", "lines": 5, "key_files": key_files}, path=bin_dir)
    # no "rc": Ansible would fail a result whose rc is not 0, and `ds41f logs` names a rank without a log itself
    assert done["docker_rc"] == 1 and "rc" not in done and not done.get("failed")
    assert done["lines"] == ["No such container: other"]


def test_follow_runs_the_same_redaction_on_the_node(tmp_path, node):
    bin_dir, key_files = node
    ssh = {"host": "10.0.0.1", "user": "root", "port": "", "key": "", "args": ""}
    argv = logs.follow_argv({"container": "spark-ds41f", "ssh": ssh, "key_files": key_files}, 20)
    remote = shlex.split(argv[-1])  # what the node's shell runs
    assert remote[0] == "python3"
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    done = subprocess.run([sys.executable] + remote[1:], capture_output=True, text=True, env=env, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == len(LOG) and unredacted(lines) == []
    assert (tmp_path / "followed").read_text().split() == ["logs", "--follow", "--tail", "20", "spark-ds41f"]


def test_a_secret_inside_another_is_redacted_whole_and_a_too_short_value_is_no_secret(tmp_path):
    assert redaction.redact_text("a abcdef123456 b abcdef", ["abcdef", "abcdef123456"]) == "a (redacted) b (redacted)"
    keys = tmp_path / "keys.env"
    keys.write_text("# VLLM_API_KEY=commented-out-value\nVLLM_API_KEY='quoted-key-value'\nDEBUG=1\n")
    assert redaction.file_secrets([str(keys), str(tmp_path / "absent")]) == {"quoted-key-value"}


def test_through_ansible_a_rank_without_a_log_is_a_reading_not_a_failed_task(tmp_path, node, monkeypatch):
    """Ansible fails any module result whose rc is not 0: the task that reads a stopped rank's log must still end ok,
    so `ds41f logs` gets the rank's reading and names it (seen on the bad day's dgx4, Docker stopped)."""
    import yaml

    from ds41f import runs

    bin_dir, key_files = node
    playbook = tmp_path / "logs.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "environment": {
        "PATH": "%s:%s" % (bin_dir, os.environ["PATH"])}, "tasks": [
        {"name": "Read the log", "dgxspark.ds41f.node_steps": {"steps": [{"module": "engine_log", "args": {
            "container": "{{ container }}", "lines": 5, "key_files": key_files}}]}, "register": "seen", "loop": [
            "spark-ds41f", "other"], "loop_control": {"loop_var": "container"}}]}]))
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
    result = runs.run_playbook("logs", [str(playbook), "-i", "localhost,", "-c", "local"], {
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable}, quiet=True)
    assert result.rc == 0, (result.artifacts / "stdout").read_text()
    items = [e["event_data"]["res"] for e in result.events() if e.get("event") == "runner_item_on_ok"]
    assert [(i["docker_rc"], len(i["lines"])) for i in items] == [(0, len(LOG)), (1, 1)]
    assert unredacted(sum((i["lines"] for i in items), [])) == []
