# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Engine arguments against a flag table generated from the engine's own argument parser.

The controller has no vLLM or SGLang (they need torch), so ``engines/vllm_flags.json`` and
``engines/sglang_flags.json`` hold what their parsers know: every option string, how many values it takes, the
type its parser converts a value with (probed on the real type function: int, human-readable int, float, JSON,
string), and its choices. ``python -m ds41f.engine_flags`` writes them from the lab engine's parsers (its header
names the parser and version), and tests/unit/serve/test_engine_flag_tables.py runs the real parsers on values
made from every entry, so the table and the parser agree.

``argv_problems`` walks an argument list as argparse does (``--flag value``, ``--flag=value``, zero-argument
flags, abbreviations where the parser allows them, vLLM's ``--flag_name`` spelling and ``--json-flag.key value``)
and returns what the parser would refuse: an unknown flag (with the closest known one), a missing value, a value
its type or choices refuse, JSON that does not parse. Flags only a release's patched vLLM knows
(``serve_patched_flags``) are skipped with their value; one named ``--*-config`` must still carry a JSON object,
as every upstream ``--*-config`` flag does (the table test checks that convention).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engines")
TABLES = {"vllm": "vllm_flags.json", "sglang": "sglang_flags.json"}
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


@functools.cache
def table(engine):
    """The flag table of ``engine`` (vllm or sglang), read once."""
    with open(os.path.join(HERE, TABLES[engine])) as handle:
        return json.load(handle)


def _convert(spec, text):
    """The value as the parser's type function would read it (kinds: the table's header); ValueError where the
    function refuses it."""
    kind, _, optional = spec.get("type", "str").partition("|")
    if optional and text in ("", "None"):
        return None
    if kind in ("int", "human_int", "human_int_auto"):
        if kind == "human_int_auto" and (text.strip() == "-1" or text.strip().lower() == "auto"):
            return -1
        match = _HUMAN_INT.fullmatch(text.strip()) if kind != "int" else None
        if match and match.group(2).isupper() and "." in match.group(1):
            raise ValueError("decimals with a binary suffix")
        return int(float(match.group(1))) if match else int(text)
    if kind == "float":
        return float(text)
    if kind == "json" or kind == "json_or_str" and re.fullmatch(r"(?s)\s*{.*}\s*", text):
        return json.loads(text)
    if kind in ("config", "object"):
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(value) - set(spec.get("fields") or value))
        if unknown:
            close = difflib.get_close_matches(unknown[0], spec["fields"], n=1, cutoff=0.6)
            raise ValueError("%r is not a key of this config%s" % (
                unknown[0], "; did you mean %r?" % close[0] if close else " (keys: %s)" % ", ".join(spec["fields"])))
        return value
    normalize = spec.get("normalize")
    if normalize == "lower_underscore":
        return text.lower().replace("-", "_")
    if normalize == "lower":
        return text.lower()
    return text


def _describe(kind):
    kind = kind.partition("|")[0]
    return {"int": "a whole number", "human_int": "a whole number (or 1k, 2M)", "human_int_auto": "a whole number "
            "(or 1k, 2M, auto)", "float": "a number", "json": "JSON", "json_or_str": "a string or a JSON object",
            "config": "a JSON object of the config's keys", "object": "a JSON object",
            "str": "a string"}.get(kind, "a value")


def _is_flag(table_, token):
    """argparse's test of a token: a flag (O) or a value (A)."""
    if not token or token[0] != "-" or token == "-":
        return False
    if _NEGATIVE.match(token) and not table_.get("negative_flags"):
        return False
    return " " not in token or token.split("=", 1)[0] in table_["flags"]


def _lookup(table_, name, patched):
    """(canonical option, spec, None) of an option string as the parser resolves it, or (None, None, (reason,
    fix))."""
    flags = table_["flags"]
    if table_.get("underscores") and name.startswith("--"):
        head, dot, rest = name[2:].partition(".")
        name = "--" + head.replace("_", "-") + dot + rest
    if name in flags:
        return name, flags[name], None
    base, _, key = name.partition(".")
    kind = flags.get(base, {}).get("type", "")
    if table_.get("json_dotted") and key and kind.startswith(("json", "config")):
        fields, first = flags[base].get("fields"), key.split(".")[0].rstrip("+")
        if kind.startswith("config") and fields and first not in fields:
            close = difflib.get_close_matches(first, fields, n=1, cutoff=0.6)
            return None, None, ("%s: %r is not a key of %s%s" % (name, first, base, "; did you mean %s.%s?" % (
                base, close[0]) if close else "."), "use one of its keys: %s." % ", ".join(fields))
        return base, {"nargs": None, "type": "str"}, None  # one key of a JSON flag: its value is JSON or text
    if table_.get("allow_abbrev") and name.startswith("--"):
        matches = sorted(o for o in flags if o.startswith(name))
        if len(matches) == 1:
            return matches[0], flags[matches[0]], None
        if matches:
            return None, None, ("%s is ambiguous: it could be %s." % (name, ", ".join(matches[:6])),
                                "write the whole flag.")
    close = difflib.get_close_matches(name, sorted(set(flags) | set(patched)), n=1, cutoff=0.6)
    return None, None, ("%s is not a flag of %s%s" % (name, table_["name"], "; did you mean %s?" % close[0]
                                                      if close else "."),
                        "correct the flag (%s); a flag only the release's patched engine knows goes in "
                        "serve_patched_flags." % ("write %s" % close[0] if close else "%s --help lists them" %
                                                  table_["engine"]))


def _value_problem(flag, spec, value):
    kind = spec.get("type", "str")
    try:
        converted = _convert(spec, value)
    except (ValueError, TypeError) as exc:
        detail = " (%s)" % exc if kind.startswith(("json", "config", "object")) else ""
        return "%s %r is not %s%s." % (flag, value, _describe(kind), detail)
    choices = spec.get("choices")
    if choices is not None and converted is not None and str(converted) not in choices:
        return "%s %r is not one of %s." % (flag, value, ", ".join(choices))
    return None


def argv_problems(argv, table_, patched=(), positionals_allowed=0):
    """[(index, reason, fix)] for an argument list as the engine's parser reads it: the recipe's own flags, so no
    positional argument (the model is rendered before them) unless ``positionals_allowed``."""
    out, positionals, i = [], 0, 0
    patched = set(patched or ())
    while i < len(argv):
        token, index = argv[i], i
        if not isinstance(token, str):
            out.append((index, "%r is not a string." % (token,), "quote it."))
            i += 1
            continue
        if token == "--":
            break
        if not _is_flag(table_, token):
            positionals += 1
            if positionals > positionals_allowed:
                out.append((index, "%r is not a value of the flag before it, and the parser takes no more "
                            "positional arguments (unrecognized arguments: %s)." % (token, token),
                            "remove it, or give it to the flag it belongs to."))
            i += 1
            continue
        name, eq, inline = token.partition("=")
        short = table_.get("short_options") or {}
        if name[:2] in short and name != name[:2]:  # vLLM's -O3: -O with its value attached
            name, eq, inline = short[name[:2]], "=", token[3:] if token[2:3] == "=" else token[2:]
        elif name in short:
            name = short[name]
        if name in patched:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            value = inline if eq else (nxt if isinstance(nxt, str) and not _is_flag(table_, nxt) else None)
            if name.endswith("-config") and value is not None and _value_problem(name, {"type": "object"}, value):
                out.append((index, "%s %r is not a JSON object, and every --*-config flag of vLLM takes one." % (
                    name, value), "write the value as a JSON object, e.g. '{\"key\": \"value\"}' in YAML single "
                    "quotes."))
            i += 1 + (0 if eq or value is None else 1)
            continue
        if name in (table_.get("refused") or {}):
            out.append((index, "%s %s." % (name, table_["refused"][name]), "remove %s from the list." % name))
            i += 1 + (0 if eq or i + 1 >= len(argv) or _is_flag(table_, str(argv[i + 1])) else 1)
            continue
        flag, spec, unknown = _lookup(table_, name, patched)
        if unknown:
            out.append((index,) + unknown)
            i += 1  # the value it was given, if any, is not a second problem
            i += 1 if not eq and i < len(argv) and isinstance(argv[i], str) and not _is_flag(table_, argv[i]) else 0
            continue
        nargs = spec.get("nargs")
        if nargs == 0:
            if eq:
                out.append((index, "%s takes no value, so the parser refuses %r (ignored explicit argument)." % (
                    flag, inline), "write %s alone." % flag))
            i += 1
            continue
        values = [inline] if eq else []
        j = i + 1
        if not eq:
            want = 1 if nargs in (None, "?") else (nargs if isinstance(nargs, int) else None)
            while j < len(argv) and isinstance(argv[j], str) and not _is_flag(table_, argv[j]) and (
                    want is None or len(values) < want):
                values.append(argv[j])
                j += 1
        if not values and nargs not in ("?", "*"):
            out.append((index, "%s expects a value and none follows it (the next element is a flag or the end)." %
                        flag, "give %s its value as the next element of the list." % flag))
        for value in values if spec.get("action") != "custom" else []:
            bad = _value_problem(flag, spec, value)
            if bad:
                out.append((index, bad,
                            "give %s %s%s." % (flag, _describe(spec.get("type", "str")),
                                               " (one of %s)" % ", ".join(spec["choices"])
                                               if spec.get("choices") else "")))
        i = j
    return out


def _engine(values, arg):
    return arg or (values.get("serve_engine") or "vllm")


def recipe_problems(value, values, arg):
    """The ``engine flags`` form: a recipe's own flags (``serve_args``), for the engine ``serve_engine`` names (or
    the one the form's argument names, ``engine flags of sglang``)."""
    if not isinstance(value, list):
        return []
    engine = _engine(values, arg)
    patched = []
    if engine == "vllm":
        per_release = values.get("serve_patched_flags") or {}
        patched = per_release.get(values.get("ds41f_release")) or [] if isinstance(per_release, dict) else []
    return [("[%d]" % index, None, reason, fix)
            for index, reason, fix in argv_problems(value, table(engine), patched if isinstance(patched, list)
                                                    else [])]


def config_problems(value, values, arg):
    """The ``engine config of --flag`` form: a mapping rendered as that vLLM flag's JSON, its keys the config's
    (unless the release's patched vLLM owns the flag, serve_patched_flags)."""
    if not isinstance(value, dict) or not value:
        return []
    from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import structured

    not_json = structured.json_object(value)
    if not_json:
        return not_json
    per_release = values.get("serve_patched_flags") or {}
    patched = per_release.get(values.get("ds41f_release")) if isinstance(per_release, dict) else None
    spec = table("vllm")["flags"].get(arg) or {}
    if arg in (patched or []) or not spec.get("fields"):
        return []
    close = difflib.get_close_matches
    return [(".%s" % key, None, "is not a key of %s in %s%s" % (arg, table("vllm")["name"], "; did you mean %s?" % (
        close(key, spec["fields"], 1, 0.6)[0]) if close(key, spec["fields"], 1, 0.6) else "."),
        "use a key of %s (%s), or list %s in serve_patched_flags if the release's patched vLLM knows it." % (
            arg, ", ".join(spec["fields"]), arg)) for key in value if key not in spec["fields"]]


def bench_problems(value, values, arg):
    """``ds41f bench``'s own parser on the arguments playbooks/bench.yml adds, where the controller has ds41f."""
    if not isinstance(value, list) or not value:
        return []
    try:
        from ds41f import cli
    except ImportError:
        return []  # a collection without the ds41f command: bench.yml cannot run it either, and says so
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.parser().parse_args(["bench", "--url", "http://127.0.0.1:1"] + [str(v) for v in value])
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return [("", None, "is refused by ds41f bench's parser: %s." % (lines[-1] if lines else "rejected"),
                 "use the arguments ds41f bench --help lists.")]
    return []
