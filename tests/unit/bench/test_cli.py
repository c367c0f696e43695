"""`ds41f bench` arguments: lists, choices and the API key file the serve stage writes."""

import pytest

from ds41f import cli
from ds41f.bench import cli as bench_cli
from tests.unit import certificates as certs


def test_lists_and_choices_parse():
    args = cli.parser().parse_args(["bench", "--concurrency", "1,16", "--reasoning", "off", "--suites", "decode"])
    assert (args.concurrency, args.reasoning, args.suites) == ([1, 16], [False], ["decode"])
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["bench", "--suites", "decode,speed"])


def test_the_api_key_comes_from_the_serve_stage_env_file_or_the_environment(tmp_path, monkeypatch):
    env_file = tmp_path / "api-key.env"
    env_file.write_text("# written by the serve stage\nVLLM_API_KEY=sk-lab\n")
    assert bench_cli.api_key(str(env_file)) == "sk-lab"
    bare = tmp_path / "key"
    bare.write_text("sk-bare\n")
    assert bench_cli.api_key(str(bare)) == "sk-bare"
    monkeypatch.setenv("DS41F_API_KEY", "sk-env")
    assert bench_cli.api_key(None) == "sk-env"


def resolved(*argv):
    args = cli.parser().parse_args(["bench", *argv])
    return args, bench_cli.resolve(args)


def test_quick_full_and_all():
    args, method = resolved()
    assert args.suites == list(bench_cli.QUICK) and (args.min_samples, args.max_samples) == (3, 4)
    assert method["mode"] == "quick"
    args, method = resolved("--full")
    assert (args.min_samples, args.max_samples) == (6, 40) and method["samples"] == "6-40"
    assert "compliance" not in args.suites and "admission" in args.suites and "portable" in args.suites
    args, _ = resolved("--suite", "all")
    assert args.suites == list(bench_cli.SUITES)


def test_concurrency_is_capped_by_the_shapes_sequences():
    args, method = resolved("--shape", "tp3-triangle", "--sampled-concurrency", "1,4,16")
    assert args.concurrency == [1, 2, 4, 8] and args.sampled_concurrency == [1, 4]
    assert method["max_seqs"] == 8
    assert method["skipped"][0] == "concurrency c16: past the 8 sequences of tp3-triangle"
    args, _ = resolved("--shape", "tp4-ring")
    assert args.concurrency == [1, 2, 4, 8, 16]
    args, method = resolved("--max-seqs", "2")
    assert args.concurrency == [1, 2] and "--max-seqs 2" in method["skipped"][0]
    with pytest.raises(SystemExit, match="not a shape"):
        resolved("--shape", "tp9-star")


def test_compare_alone_means_the_seed_reference():
    assert cli.parser().parse_args(["bench", "--compare"]).compare == "seed"
    assert cli.parser().parse_args(["bench", "--compare", "old/bench.json"]).compare == "old/bench.json"
    assert cli.parser().parse_args(["bench"]).compare is None


def test_the_shape_comes_from_the_inventory_site_file():
    assert bench_cli.site_file("inventories/triangle3").name == "triangle3.spark.yml"


def test_converge_on_sets_every_point_that_has_the_metric():
    from ds41f.bench import runner

    args, _ = resolved("--converge-on", "step_ms", "--concurrency", "1", "--prompts", "prose", "--reasoning", "off",
                       "--prefill-lengths", "256")
    bench = runner.Bench("http://127.0.0.1:1", "m", args)
    assert [p.converge for p in bench.decode_points()] == ["step_ms"]
    assert [p.converge for p in bench.prefill_points()] == ["prefill_tps"]  # a prefill has no steps
    default, _ = resolved()
    precision = runner.Bench("http://127.0.0.1:1", "m", default).precision_points()
    assert {(p.converge, p.min_samples, p.max_samples) for p in precision} == {("step_ms", 5, 12)}


def test_the_ca_file_is_for_an_https_url_and_must_hold_a_certificate(tmp_path):
    cert, key, _ = certs.pair(tmp_path)
    with pytest.raises(bench_cli.TrustError, match="is not https://"):
        bench_cli.trust("http://192.0.2.11:8000", str(cert))
    for bad in (tmp_path / "missing.pem", key):  # no file; a file without a certificate
        with pytest.raises(bench_cli.TrustError, match="Fix: name the site's certificate file"):
            bench_cli.trust("https://192.0.2.11:8000", str(bad))
    args = cli.parser().parse_args(["bench", "--url", "https://192.0.2.11:8000", "--ca-file", str(cert)])
    assert args.ca_file == str(cert)
