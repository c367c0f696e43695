"""The flag tables the controller checks engine arguments with agree with the engines' own parsers.

plugins/module_utils/engines/vllm_flags.json and sglang_flags.json are written by `make engine-flags` from the lab
engine's vLLM and SGLang's parser. Here the real parsers (run by the engine's Python, in one process per engine)
judge arguments made from every entry of the tables - a value each entry's type takes and one it refuses, a flag
without its value, a value given to a flag that takes none - and the table check (forms/engine_flags.py) must give
the same verdict on every one; a flag the pinned engine parses must pass, and the tables must be the ones their
parsers write now.
"""

import json

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import engine_flags
from ds41f import engine_flags as generator
from ds41f.lab import engine
from tests.conftest import ROOT

pytestmark = [pytest.mark.lab_engine, pytest.mark.engine_python]

GOOD = {"str": "x", "int": "3", "human_int": "2k", "human_int_auto": "auto", "float": "0.5", "json": '{"a": 1}',
        "json_or_str": "x", "config": "{}"}
BAD = {"int": ["x", "1.5"], "human_int": ["x", "1.5K"], "human_int_auto": ["x"], "float": ["x"], "json": ["{"],
       "json_or_str": ["{x"], "config": ["{", "[1]"]}


def ready(engine_name):
    if not (engine.SITE / "vllm").is_dir():
        pytest.fail("the lab engine is not built. Fix: make engine")
    if engine_name == "sglang" and not (ROOT / ".lab" / "shared" / "sglang-parser" / ".installed").exists():
        pytest.fail("SGLang's parser is not installed. Fix: make sglang-parser")


def cases(table):
    """(argv, why) made from every action of the table: values its type takes and refuses, misuse of its arity."""
    out = []
    for flag, spec in table["flags"].items():
        if flag in ("-h", "--help", "--version") or not flag.startswith("--") or flag in table.get("refused", {}):
            continue
        kind, _, optional = spec.get("type", "str").partition("|")
        if spec["nargs"] == 0:
            out += [([flag], "alone"), (["%s=1" % flag], "with a value")]
            continue
        if spec.get("action") == "custom":  # its action checks the value: the table leaves it to the node
            out += [([flag], "without its value")] if spec["nargs"] in (None, "+") else []
            continue
        good = spec["choices"][0] if spec.get("choices") else GOOD.get(kind, "x")
        if kind == "config" and spec.get("fields"):
            out.append(([flag, json.dumps({spec["fields"][0] + "_zz": 1})], "an unknown key"))
        out.append(([flag, good], "a good value"))
        out += [([flag, bad], "a bad value") for bad in BAD.get(kind, [])]
        if spec.get("choices"):
            out.append(([flag, "no-such-choice"], "not a choice"))
        if optional:
            out.append(([flag, "None"], "None"))
        if spec["nargs"] in (None, "+"):
            out.append(([flag], "without its value"))
    return out


def recipe_argvs():
    """{engine: [the pinned recipe's own flags]}: the vLLM release's without its patched-only flags, SGLang's."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import vllm_check

    recipe = yaml.safe_load((ROOT / "group_vars" / "all" / "serve.yml").read_text())
    sglang = yaml.safe_load((ROOT / "group_vars" / "all" / "serve_sglang.yml").read_text())
    release = yaml.safe_load((ROOT / "group_vars" / "all" / "release.yml").read_text())["ds41f_release"]
    patched = recipe["serve_patched_flags"][release]
    return {"vllm": (recipe["serve_args"], patched, vllm_check.strip_flags(recipe["serve_args"], patched)),
            "sglang": (sglang["serve_sglang_args"], [], sglang["serve_sglang_args"])}


@pytest.fixture(scope="module", params=["vllm", "sglang"])
def engine_run(request):
    """One run of the engine's parser: the table it writes now, and its verdicts on the cases and the recipe."""
    name = request.param
    ready(name)
    table = engine_flags.table(name)
    argvs = cases(table)
    now, real = generator.run_in_engine(name, "[f.dump(%r), f.verdicts(%r, request)]" % (name, name),
                                        [a for a, _ in argvs] + [recipe_argvs()[name][2]])
    return name, table, argvs, now, real


def test_the_table_and_the_real_parser_agree_on_every_entry(engine_run):
    name, table, argvs, _, real = engine_run
    assert len(argvs) > 500
    disagree = []
    for (argv, why), verdict in zip(argvs, real[:-1], strict=True):
        ours = engine_flags.argv_problems(argv, table)
        if bool(ours) != bool(verdict):
            disagree.append((argv, why, verdict, [p[1] for p in ours]))
    assert disagree == [], "%s: %d of %d disagree, first: %s" % (name, len(disagree), len(argvs), disagree[:5])


def test_the_pinned_recipe_s_flags_pass_the_table_and_the_real_parser(engine_run):
    name, table, _, _, real = engine_run
    argv, patched, _ = recipe_argvs()[name]
    assert engine_flags.argv_problems(argv, table, patched) == []
    assert real[-1] is None


def test_a_misspelt_flag_gets_did_you_mean():
    misspelt = engine_flags.argv_problems(["--max-model-lenn", "4096"], engine_flags.table("vllm"))
    assert [(i, reason) for i, reason, _ in misspelt] == [
        (0, "--max-model-lenn is not a flag of vLLM 0.32.0; did you mean --max-model-len?")]


def test_the_tables_are_what_their_parsers_write_now(engine_run):
    name, table, _, now, _ = engine_run
    assert table == now, "Fix: make engine-flags"
    assert table["name"].split()[-1] in {"vllm": engine.VLLM, "sglang": "sglang==0.5.23"}[name]


def test_every_upstream_config_flag_takes_a_json_object():
    """The convention the check relies on for a patched --*-config flag: upstream, every one takes JSON."""
    table = engine_flags.table("vllm")
    kinds = {flag: spec.get("type", "") for flag, spec in table["flags"].items() if flag.endswith("-config")}
    not_json = {f: k for f, k in kinds.items() if not k.startswith(("json", "config"))}
    # --config reads a YAML file, --generation-config names a folder or "vllm"; the other two take text by design
    assert set(not_json) <= {"--config", "--generation-config", "--model-loader-extra-config",
                             "--additional-config"}, not_json


def test_each_patched_flag_is_unknown_upstream_or_its_recipe_value_is():
    """serve_patched_flags lists the flags the table skips: each must be one the upstream parser does not know, or
    knows with other values (upstream 0.32.0 has --linear-backend, --moe-backend, --jit-monitor-mode and
    --engram-config, without tilelang, off or the release's engram keys). Otherwise the check would skip a flag
    for nothing."""
    argv, patched, _ = recipe_argvs()["vllm"]
    table = engine_flags.table("vllm")
    for flag in patched:
        if flag not in table["flags"]:
            continue
        i = argv.index(flag)
        value = argv[i + 1] if table["flags"][flag]["nargs"] != 0 else None
        assert engine_flags.argv_problems([flag] + ([value] if value is not None else []), table), (
            "%s %s parses upstream: remove it from serve_patched_flags" % (flag, value))
