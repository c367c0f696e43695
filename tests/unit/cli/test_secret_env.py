"""Secrets the operator exported stay out of what `ds41f` starts and keeps: a real ansible-playbook run through
ansible-runner, with facts gathered on the controller and a task that prints its environment, leaves no exported
secret in its run folder or fact cache; the bench still gets its key; a vault password file becomes its flag."""

from __future__ import annotations

import sys

import pytest
import yaml

from ds41f import runs, secret_env
from ds41f.bench import cli as bench_cli

SECRETS = {"DS41F_API_KEY": "ds41f-exported-key-5b2c", "HF_TOKEN": "hf_exported_token_91d3",
           "MY_DB_PASSWORD": "exported-password-77aa", "VAULT_ADDR_SECRET": "exported-vault-secret-3e1f"}


@pytest.fixture
def exported(monkeypatch):
    monkeypatch.setattr(secret_env, "_held", {})
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", "/home/op/.vault-pass")
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "False")  # a value left in the shell: the check stays on
    monkeypatch.setenv("KEYBOARD_LAYOUT", "de")  # not a secret's name


@pytest.mark.parametrize("name, secret", [
    ("DS41F_API_KEY", True), ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("MY_PASSWORD_FILE", True),
    ("ANSIBLE_VAULT_IDENTITY_LIST", True), ("GITHUB_TOKEN", True), ("ANSIBLE_PRIVATE_KEY_FILE", False),
    ("ANSIBLE_HOST_KEY_CHECKING", False), ("SSH_AUTH_SOCK", False), ("KEYBOARD_LAYOUT", False), ("PATH", False)])
def test_names_that_hold_a_secret(name, secret):
    assert secret_env.is_secret(name) is secret


def test_a_run_through_the_runner_keeps_no_exported_secret_and_checks_host_keys(tmp_path, monkeypatch, exported):
    playbook = tmp_path / "env.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": True, "tasks": [
        {"name": "What a local task sees", "ansible.builtin.command": {"argv": ["env"]}, "register": "seen",
         "changed_when": False},
        {"name": "Shown", "ansible.builtin.debug": {"var": "seen.stdout_lines"}}]}]))
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
    facts = tmp_path / "facts"
    argv = runs.playbook_argv(playbook, ["localhost,"]) + ["-c", "local", "-vvv"]
    assert argv[3:5] == ["--vault-password-file", "/home/op/.vault-pass"]  # a path, as a flag
    argv.remove("--vault-password-file")
    argv.remove("/home/op/.vault-pass")  # no such file here
    result = runs.run_playbook("env", argv, {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(facts),
                                             "ANSIBLE_PYTHON_INTERPRETER": sys.executable}, quiet=True)
    stdout = (result.artifacts / "stdout").read_text()
    assert result.rc == 0, stdout
    assert "KEYBOARD_LAYOUT=de" in stdout and "ANSIBLE_HOST_KEY_CHECKING=True" in stdout  # the task saw its env
    files = [p for p in list((tmp_path / "runs").rglob("*")) + list(facts.rglob("*")) if p.is_file()]
    assert any(p.name == "command" for p in files) and any(p.parent.name == "job_events" for p in files)
    cached = [p for p in files if p.name.endswith("localhost")]  # the controller's facts (ansible_env with them)
    assert cached and "ansible_env" in cached[0].read_text()
    leaks = [(str(p), v) for p in files for v in SECRETS.values() if v in p.read_text(errors="replace")]
    assert leaks == []
    assert "/home/op/.vault-pass" not in (result.artifacts / "command").read_text()
    # the bench still reads the exported key, from what ds41f holds
    assert bench_cli.api_key(None) == SECRETS["DS41F_API_KEY"]


def test_the_bench_reads_its_key_from_standard_input(monkeypatch):
    import io

    assert bench_cli.api_key("-", stdin=io.StringIO("VLLM_API_KEY=sk-from-stdin\n")) == "sk-from-stdin"
    assert bench_cli.api_key("-", stdin=io.StringIO("sk-bare\n")) == "sk-bare"


def test_vault_identities_become_one_flag_each(monkeypatch):
    monkeypatch.setattr(secret_env, "_held", {})
    monkeypatch.setenv("ANSIBLE_VAULT_IDENTITY_LIST", "prod@/etc/ds41f/prod.pass, dev@prompt")
    assert secret_env.ansible_flags() == ["--vault-id", "prod@/etc/ds41f/prod.pass", "--vault-id", "dev@prompt"]
    assert "ANSIBLE_VAULT_IDENTITY_LIST" not in __import__("os").environ
