"""The lab engine: a second build changes nothing, and running_server() serves real vLLM on loopback."""

import json
import subprocess
import tarfile
import urllib.request

import pytest

from ds41f.lab import engine, lab_rank

PORT = 18473  # loopback only


@pytest.fixture(scope="module")
def built():
    if not (engine.MANIFEST.exists() and engine.BIN.joinpath("lab-rank").exists()):
        pytest.fail("the lab engine is not built. Fix: make engine (python -m ds41f.lab.engine build)")
    return engine.read_manifest()


@pytest.mark.lab_engine
def test_a_second_build_changes_nothing(built, capsys):
    after = engine.build()
    assert {k: v.get("built") for k, v in after.items()} == {k: v.get("built") for k, v in built.items()}
    assert capsys.readouterr().out.count("up to date") == 3


@pytest.mark.lab_engine
def test_the_images_run_vllm_serve_and_vllm_is_the_lab_shim(built):
    """The built archive's images have the vLLM OpenAI image's ENTRYPOINT, and `vllm` on their PATH is lab-rank."""
    with tarfile.open(engine.IMAGE_ARCHIVE) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))
        configs = [json.load(archive.extractfile(m["Config"]))["config"] for m in manifest]
    assert len(configs) == len(engine.IMAGE_TAGS)
    for config in configs:
        assert config["Entrypoint"] == ["vllm", "serve"]
        path = next(e.split("=", 1)[1] for e in config["Env"] if e.startswith("PATH="))
        assert path.split(":")[0] == engine.NODE_ENGINE + "/bin/lab"
    shim = engine.BIN / "lab" / "vllm"
    assert shim.resolve() == (engine.BIN / "lab-rank").resolve()
    # Run by the engine's Python, as python3 (bookworm's 3.11) runs it in a node: the site's wheels are cp311.
    version = subprocess.run([engine.python(), str(shim), "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.strip() == engine.VLLM_VERSION  # not serve: vLLM's own CLI
    refused = subprocess.run([engine.python(), str(shim), "serve", "/models", "--max-num-seqs", "many"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--max-num-seqs: invalid int value: 'many'" in refused.stderr


@pytest.mark.lab_engine
def test_running_server_answers_chat_with_thinking_off(built):
    with engine.running_server(PORT) as srv:
        models = json.load(urllib.request.urlopen(srv.url + "/v1/models", timeout=10))
        assert [m["id"] for m in models["data"]] == ["ds41f-tiny"]
        body = json.dumps({"model": srv.model, "max_tokens": 8, "temperature": 0,
                           "messages": [{"role": "user", "content": "What is 19 + 23?"}],
                           "chat_template_kwargs": {"thinking": False}}).encode()
        req = urllib.request.Request(srv.url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
        answer = json.load(urllib.request.urlopen(req, timeout=120))
        assert answer["usage"]["completion_tokens"] == 8 and answer["choices"][0]["finish_reason"] == "length"
        process = srv.process
    assert process.poll() is not None  # stopped on exit
    assert not engine.healthy(srv.url, timeout=1)


def test_lab_rank_drops_only_the_group_flags():
    argv = ["serve", "/models", "--tensor-parallel-size", "3", "--nnodes=3", "--node-rank", "0", "--master-addr",
            "10.0.0.1", "--master-port", "9999", "--max-model-len", "2048", "--headless"]
    kept, dropped = lab_rank.split_group(argv)
    assert kept == ["serve", "/models", "--max-model-len", "2048"]
    assert dropped == ["--tensor-parallel-size", "3", "--nnodes=3", "--node-rank", "0", "--master-addr", "10.0.0.1",
                       "--master-port", "9999", "--headless"]
    assert lab_rank.flag_value(argv, "--nnodes") == "3"


def test_a_lab_group_lowers_only_the_group_size_and_refuses_a_size_below_two(monkeypatch):
    argv = ["serve", "/models", "--tensor-parallel-size", "4", "--nnodes=4", "--node-rank", "1", "--master-addr",
            "10.0.0.1", "--master-port", "9999", "--headless"]
    lowered = lab_rank.set_flag(lab_rank.set_flag(argv, "--tensor-parallel-size", "2"), "--nnodes", "2")
    assert lowered == ["serve", "/models", "--tensor-parallel-size", "2", "--nnodes=2", "--node-rank", "1",
                       "--master-addr", "10.0.0.1", "--master-port", "9999", "--headless"]
    monkeypatch.delenv("DS41F_LAB_GROUP", raising=False)
    assert lab_rank.lab_group() == 0
    monkeypatch.setenv("DS41F_LAB_GROUP", "2")
    assert lab_rank.lab_group() == 2
    for bad in ("1", "two"):
        monkeypatch.setenv("DS41F_LAB_GROUP", bad)
        with pytest.raises(ValueError, match="DS41F_LAB_GROUP"):
            lab_rank.lab_group()


def test_the_engine_runs_on_its_own_python_whatever_the_controllers(monkeypatch, tmp_path):
    monkeypatch.setenv("DS41F_ENGINE_PYTHON", "/opt/engine/bin/python")
    assert engine.python() == "/opt/engine/bin/python"
    assert engine.serve_argv(8000)[0] == "/opt/engine/bin/python"
    monkeypatch.delenv("DS41F_ENGINE_PYTHON")
    monkeypatch.setattr(engine.sys, "version_info", (3, 13, 0))
    (tmp_path / "python3.11").write_text("#!/bin/sh\n")
    (tmp_path / "python3.11").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert engine.python() == str(tmp_path / "python3.11")  # never the controller's 3.13
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    with pytest.raises(SystemExit, match="no Python 3.11 for the lab engine.*DS41F_ENGINE_PYTHON"):
        engine.python()
    monkeypatch.setattr(engine.sys, "version_info", (3, 11, 7))
    assert engine.python() == engine.sys.executable
