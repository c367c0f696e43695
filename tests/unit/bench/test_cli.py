"""`ds41f bench` arguments: lists, choices and the API key file the serve stage writes."""

import pytest

from ds41f import cli
from ds41f.bench import cli as bench_cli


def test_lists_and_choices_parse():
    args = cli.parser().parse_args(["bench", "--concurrency", "1,16", "--reasoning", "off", "--suites", "decode"])
    assert (args.concurrency, args.reasoning, args.suites) == ([1, 16], [False], ["decode"])
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["bench", "--suites", "decode,admission"])


def test_the_api_key_comes_from_the_serve_stage_env_file_or_the_environment(tmp_path, monkeypatch):
    env_file = tmp_path / "api-key.env"
    env_file.write_text("# written by the serve stage\nVLLM_API_KEY=sk-lab\n")
    assert bench_cli.api_key(str(env_file)) == "sk-lab"
    bare = tmp_path / "key"
    bare.write_text("sk-bare\n")
    assert bench_cli.api_key(str(bare)) == "sk-bare"
    monkeypatch.setenv("DS41F_API_KEY", "sk-env")
    assert bench_cli.api_key(None) == "sk-env"
