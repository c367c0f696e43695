"""Every filter the collection exports has documentation that ansible-doc renders and that matches its signature."""

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


# A Python warning as the interpreter prints it: "<file>:<line>: <Category>: <text>" and the source line below it.
PY_WARNING = re.compile(r"^(?P<file>/\S+\.py):\d+: \w*Warning: .*\n(?:[ \t]+.*\n?)?", re.M)


def own_stderr(stderr):
    """stderr less the Python warnings of other packages (cryptography 51 deprecates DSA, and ansible-core imports
    it); a warning raised in the collection's own files, and any ansible-doc message, stays."""
    def keep(match):
        return match.group(0) if Path(match.group("file")).resolve().is_relative_to(ROOT / "plugins") else ""
    return PY_WARNING.sub(keep, stderr).strip()


def exported():
    found = {}
    for path in sorted((ROOT / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module("ansible_collections.dgxspark.ds41f.plugins.filter." + path.stem)
        found.update(module.FilterModule().filters())
    return found


def test_every_filter_renders_with_its_arguments_documented():
    filters = exported()
    assert len(filters) >= 16
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(ROOT / ".ansible" / "tmp"))
    names = ["dgxspark.ds41f." + n for n in filters]
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", "filter", "--json", *names],
                          cwd=ROOT, env=env, text=True, capture_output=True)
    assert proc.returncode == 0 and not own_stderr(proc.stderr), proc.stderr
    docs = json.loads(proc.stdout)
    assert sorted(docs) == sorted("dgxspark.ds41f." + n for n in filters)
    for name, func in filters.items():
        doc = docs["dgxspark.ds41f." + name]["doc"]
        params = list(inspect.signature(func).parameters)
        assert doc["name"] == name and doc["short_description"], name
        assert sorted(doc["options"]) == sorted(["_input"] + params[1:]), name
        assert [p.strip() for p in doc.get("positional", "").split(",") if p.strip()] == params[1:], name
        for arg, param in inspect.signature(func).parameters.items():
            if arg in doc["options"] and param.default is not inspect.Parameter.empty:
                assert not doc["options"][arg].get("required"), "%s: %s has a default" % (name, arg)
        assert docs["dgxspark.ds41f." + name]["examples"].count("dgxspark.ds41f." + name) >= 1, name


def test_only_other_packages_python_warnings_are_left_out():
    other = ("/v/lib/python3.12/site-packages/ansible/_internal/_ssh/_ssh_agent.py:18: CryptographyDeprecationWarning:"
             " DSA is deprecated\n  from cryptography.hazmat.primitives.asymmetric.dsa import (\n")
    ours = "%s/plugins/filter/x.py:3: DeprecationWarning: old\n  import y\n" % ROOT
    doc = "[WARNING]: dgxspark.ds41f.x: option 'y' is not documented\n"
    assert own_stderr(other) == ""
    assert own_stderr(other + doc) == doc.strip()
    assert own_stderr(ours + other) == ours.strip()
