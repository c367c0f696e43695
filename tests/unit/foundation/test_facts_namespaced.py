"""Module facts are read from ansible_facts, never as top-level variables: with INJECT_FACTS_AS_VARS off (this
project's ansible.cfg, and ansible-core's default from 2.24) a top-level ds41f_node is undefined. The fact names
come from the modules' own RETURN documentation, so a new fact is checked without editing this test."""

import os
import re

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import known_vars
from tests.conftest import ROOT


def module_facts():
    return known_vars.module_facts(str(ROOT), yaml.safe_load)


def yaml_files():
    for folder in ("roles", "playbooks", "molecule"):
        for top, _, files in os.walk(ROOT / folder):
            for name in files:
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(top, name)


def test_the_modules_document_the_facts_they_return():
    assert {"ds41f_node", "ds41f_serve", "ds41f_qualify"} <= module_facts()


def test_no_role_or_playbook_reads_a_module_fact_as_a_top_level_variable():
    facts = module_facts()
    # A fact name used as a variable: not after "ansible_facts." or "ansible_facts['", not a quoted string
    # argument (the alignment action's fact name), not part of a longer name.
    bare = re.compile(r"(?<![\w.'\"\[])(%s)\b(?!['\"])" % "|".join(sorted(facts)))
    found = []
    for path in yaml_files():
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        for number, line in enumerate(lines, 1):
            code = line.split("#", 1)[0]
            if "{{" not in code and "when:" not in code and "that:" not in code and "attr" not in code:
                continue
            for match in bare.finditer(code):
                found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, match.group(1)))
            for match in re.finditer(r"attr(?:ibute)?[=(]\s*'(%s)\b" % "|".join(sorted(facts)), code):
                found.append("%s:%d: %s (map/select attribute)" % (os.path.relpath(path, ROOT), number,
                                                                     match.group(1)))
    assert found == [], "read it as ansible_facts.<name>: %s" % found


def test_the_project_config_keeps_facts_out_of_the_top_level():
    text = (ROOT / "ansible.cfg").read_text()
    assert re.search(r"^inject_facts_as_vars = False$", text, re.M)
