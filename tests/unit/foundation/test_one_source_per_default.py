"""One source for every default: a variable the recipe (group_vars/all/) or a role's defaults gives a value is never
given a second one with `| default(...)` in a task, role var, template or playbook, where the two could differ."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
USED_WITH_DEFAULT = re.compile(r"\b([a-z][a-z0-9_]*)\s*\|\s*default\(")


def defaulted_names():
    """name -> where its one value comes from."""
    names = {}
    for path in sorted((ROOT / "group_vars" / "all").glob("*.yml")):
        names.update(dict.fromkeys(yaml.safe_load(path.read_text()) or {}, str(path.relative_to(ROOT))))
    for path in sorted(ROOT.glob("roles/*/defaults/main.yml")):
        names.update(dict.fromkeys(yaml.safe_load(path.read_text()) or {}, str(path.relative_to(ROOT))))
    return names


def files_that_use_variables():
    for pattern in ("roles/*/tasks/*.yml", "roles/*/vars/*.yml", "roles/*/handlers/*.yml", "roles/*/templates/*",
                    "playbooks/**/*.yml"):
        yield from sorted(ROOT.glob(pattern))


def test_the_names_and_files_are_found():
    names = defaulted_names()
    assert {"serve_guard_unit", "serve_state_dir", "serve_progress_first_token_s", "fabric_link_speed_mbps",
            "verify_bench_args"} <= set(names)
    assert len(list(files_that_use_variables())) > 50


def test_no_variable_with_a_value_is_defaulted_again():
    names = defaulted_names()
    found = []
    for path in files_that_use_variables():
        text = path.read_text()
        for match in USED_WITH_DEFAULT.finditer(text):  # a filter chain may break across lines
            if match.group(1) in names:
                found.append("%s:%d: %s | default(...) - its value is in %s" % (
                    path.relative_to(ROOT), text.count("\n", 0, match.start()) + 1, match.group(1),
                    names[match.group(1)]))
    assert not found, "\n".join(found)
