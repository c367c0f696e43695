"""Secrets in a container's environment never leave a module: serve_facts (fact cache, job events) and the
doctor's live_state return the API key's name with its value redacted."""

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_state
from ansible_collections.dgxspark.ds41f.plugins.modules import live_state, serve_facts

KEY = "3f9c0d6e1b2a4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
ENV = ["VLLM_API_KEY=" + KEY, "HF_TOKEN=hf_secret_value", "AWS_SECRET_ACCESS_KEY=aws-value", "PATH=/usr/bin",
       "VLLM_NO_USAGE_STATS=1", "DSV41_CACHE_WAYS=16", "SGLANG_ROCE_MAX_SIZE=2097152"]
INSPECT = [{"Id": "c0ffee", "Image": "sha256:1111", "State": {"Status": "running", "Running": True, "ExitCode": 0},
            "Config": {"Image": "localhost/ds41f-lab-engine:r1", "Env": ENV, "Cmd": ["serve", "/models"],
                       "Entrypoint": ["/opt/ds41f-lab/engine/bin/lab-rank"],
                       "Labels": {"ds41f.release": "lab-r1"}},
            "HostConfig": {"Binds": []}, "Mounts": []}]
IMAGE = [{"Id": "sha256:1111",
          "Config": {"Env": ["PATH=/usr/bin", "GPG_KEY=A035C8C19219BA821ECEA86B64E628F8D684696D"]}}]


def fake_docker(argv, *args, **kwargs):
    if argv[:2] == ["docker", "version"]:
        return 0, "26.1.5\n", ""
    if argv[:3] == ["docker", "container", "inspect"] and argv[3] == "spark-ds41f":
        return 0, json.dumps(INSPECT), ""
    if argv[:3] == ["docker", "image", "inspect"]:
        return 0, json.dumps(IMAGE), ""
    if argv[:2] == ["docker", "inspect"]:  # live_state's docker_inspect: docker <kind> inspect
        return 1, "", "no such object"
    return 1, "", "not recorded: %s" % argv


@pytest.mark.parametrize("name, secret", [
    ("VLLM_API_KEY", True), ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("api_key", True),
    ("DB_PASSWORD", True), ("SGLANG_APIKEY", True), ("PATH", False), ("DSV41_CACHE_WAYS", False),
    ("KEYBOARD_LAYOUT", False), ("DSV41_SHARED_PAD_K", False), ("TOKENIZERS_PARALLELISM", False),
])
def test_which_names_are_secrets(name, secret):
    assert engine_state.is_secret(name) is secret


def test_redact_keeps_names_and_the_callers_own_values():
    out = engine_state.redact_env(ENV + ["NOEQUALS"], keep=("HF_TOKEN",))
    assert out[0] == "VLLM_API_KEY=(redacted)"
    assert "HF_TOKEN=hf_secret_value" in out  # kept: the caller holds it already
    assert "AWS_SECRET_ACCESS_KEY=(redacted)" in out
    assert out[3:] == ENV[3:] + ["NOEQUALS"]
    assert engine_state.redact_env(None) == []


def test_serve_facts_returns_no_secret_value(monkeypatch, capsys):
    monkeypatch.setattr(AnsibleModule, "run_command", lambda self, argv, *a, **k: fake_docker(argv))
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name)
    capsys.readouterr()
    with patch_module_args({"container": "spark-ds41f", "image": "localhost/ds41f-lab-engine:r1",
                            "model_dir": "/nonexistent", "model_info": ""}), pytest.raises(SystemExit):
        serve_facts.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    env = result["ansible_facts"]["ds41f_serve"]["container"]["env"]
    assert "VLLM_API_KEY=(redacted)" in env and "HF_TOKEN=(redacted)" in env
    assert "VLLM_NO_USAGE_STATS=1" in env and "DSV41_CACHE_WAYS=16" in env
    for value in (KEY, "hf_secret_value", "aws-value"):
        assert value not in out


def test_the_doctors_reading_redacts_alike_and_keeps_the_specs_own(monkeypatch):
    class Module:
        def get_bin_path(self, name, *a, **k):
            return "/usr/bin/" + name

        def run_command(self, argv, *a, **k):
            return fake_docker(argv)

    state = live_state.container_state(Module(), "spark-ds41f", keep_env=["SGLANG_ROCE_MAX_SIZE"])
    dumped = json.dumps(state)
    assert KEY not in dumped and "hf_secret_value" not in dumped and "A035C8C1" not in dumped
    assert "VLLM_API_KEY=(redacted)" in state["env"]
    # the image's own secret-named variable is redacted the same way on both sides, so the doctor sees no drift
    assert "GPG_KEY=(redacted)" in state["image_env"]
    assert live_state.redacted_file({"HF_TOKEN": "x", "NCCL_IB_HCA": "rocep1s0f0"}, ()) == {
        "HF_TOKEN": "(redacted)", "NCCL_IB_HCA": "rocep1s0f0"}
    assert live_state.redacted_file(None, ()) is None


def test_a_kept_log_has_sglangs_key_redacted():
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import redaction

    line = "server_args=ServerArgs(model_path='/models', api_key='sk-lab-1234', port=8888)"
    kept = redaction.redact_text(line)
    assert "sk-lab-1234" not in kept and "api_key='(redacted)'" in kept and "port=8888" in kept
