"""The hub CLI command the hf source runs (the lab has no route to the hub, so only its shape is tested)."""

from ansible_collections.dgxspark.ds41f.plugins.modules.model_download import download_argv


def test_whole_revision_into_the_checkpoint_folder():
    assert download_argv("hf", "deepseek-ai/DeepSeek-V4.1-Flash", "1bae0e10", "/m", [], 8) == [
        "hf", "download", "deepseek-ai/DeepSeek-V4.1-Flash", "--revision", "1bae0e10", "--local-dir", "/m",
        "--max-workers", "8"]


def test_named_files_only():
    argv = download_argv("hf", "r/m", "abc1234", "/m", ["model-00003-of-00048.safetensors"], 4)
    assert argv[:4] == ["hf", "download", "r/m", "model-00003-of-00048.safetensors"]
