"""Each role's README.md and meta/main.yml are generated from its argument spec (tests/galaxy/role_docs.py): they are
current, every variable of every entry point has its row, and a stale file is named with the command that fixes it."""

import shutil

import pytest
import yaml

from tests.galaxy import role_docs

ROOT = role_docs.ROOT
SPECS = sorted(ROOT.glob("roles/*/meta/argument_specs.yml"))


def test_every_role_file_is_current():
    stale = [str(path.relative_to(ROOT)) for path in role_docs.stale_files()]
    assert not stale, "stale, run `%s`: %s" % (role_docs.COMMAND, stale)


def flatten(options, prefix=""):
    for name, option in options.items():
        yield prefix + name, option
        yield from flatten(option.get("options", {}), prefix + name + ".")


@pytest.mark.parametrize("spec_file", SPECS, ids=lambda p: p.parents[1].name)
def test_every_variable_has_its_row(spec_file):
    specs = yaml.safe_load(spec_file.read_text())["argument_specs"]
    text = role_docs.readme(spec_file.parents[1].name, specs)
    table_rows = {line.split(" | ")[0].strip("| `"): line for line in text.splitlines() if line.startswith("| `")}
    expected = [name for spec in specs.values() for name, _ in flatten(spec.get("options", {}))]
    assert sorted(table_rows) == sorted(set(expected))
    for name, option in (item for spec in specs.values() for item in flatten(spec.get("options", {}))):
        row = table_rows[name]
        if option.get("required"):
            assert "| *required* |" in row, name
        elif "default" in option:
            assert role_docs.cell(role_docs.show_default(option["default"])) in row, name
        for choice in option.get("choices", []):
            assert "`%s`" % choice in row, name
    for entry in specs:
        assert entry == "main" or "## Entry point `%s`" % entry in text


@pytest.mark.parametrize("spec_file", SPECS, ids=lambda p: p.parents[1].name)
def test_role_metadata_describes_the_role_for_galaxy(spec_file):
    meta = yaml.safe_load((spec_file.parent / "main.yml").read_text())
    spec = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert meta["galaxy_info"] == {"standalone": False, "description": " ".join(spec["short_description"].split()),
                                   "author": ", ".join(galaxy["authors"]), "license": "Apache-2.0"}
    assert meta["dependencies"] == []


def test_a_row_stays_one_row_of_four_cells():
    options = {"x_expr": {"type": "str", "default": "{{ a | b }}\nsecond line", "description": ["One | two.", "Three."],
                          "choices": ["p|q"]},
               "x_map": {"type": "dict", "required": True, "options": {"key": {"type": "list", "elements": "int",
                                                                             "default": [1, 2]}}}}
    assert list(role_docs.rows(options)) == [
        "| `x_expr` | str | `{{ a \\| b }}<br>second line` | One \\| two. Three. Choices: `p\\|q`. |",
        "| `x_map` | dict | *required* |  |",
        "| `x_map.key` | list of int | `[1, 2]` |  |",
    ]


def test_ansible_markup_becomes_markdown():
    text = "Set O(fabric_mtu) to C(9000) (see L(the guide,https://x.invalid/a)), I(not) B(this); M(a.b.c)."
    assert role_docs.markdown(text) == ("Set `fabric_mtu` to `9000` (see [the guide](https://x.invalid/a)), *not* "
                                        "**this**; `a.b.c`.")
    assert role_docs.markdown("C({{ a | b }})\n   wrapped") == "`{{ a | b }}` wrapped"


def test_a_changed_spec_makes_its_readme_stale_until_regenerated(tmp_path, monkeypatch, capsys):
    shutil.copy(ROOT / "galaxy.yml", tmp_path)
    for spec_file in SPECS[:2]:
        (tmp_path / spec_file.relative_to(ROOT)).parent.mkdir(parents=True)
        shutil.copy(spec_file, tmp_path / spec_file.relative_to(ROOT))
    monkeypatch.setattr(role_docs, "ROOT", tmp_path)
    assert role_docs.main(["--check"]) == 1
    assert role_docs.main([]) == 0 and role_docs.main(["--check"]) == 0

    role = SPECS[0].parents[1].name
    spec_file = tmp_path / SPECS[0].relative_to(ROOT)
    knob = "      %s_new_knob:\n        description: A new knob.\n        type: int\n        default: 7\n" % role
    spec_file.write_text(spec_file.read_text().replace("    options:\n", "    options:\n" + knob, 1))
    capsys.readouterr()
    assert role_docs.main(["--check"]) == 1
    assert capsys.readouterr().err.strip() == "stale, run `make role-docs`: roles/%s/README.md" % role
    role_docs.main([])
    assert "| `%s_new_knob` | int | `7` | A new knob. |" % role in (tmp_path / "roles" / role / "README.md").read_text()
