#!/usr/bin/env python3
"""Each role's README.md and meta/main.yml, generated from its meta/argument_specs.yml (the one source of what a role
reads) and galaxy.yml (author, license). Galaxy refuses a collection whose roles have no README and notes each role
without metadata; written by hand, both would drift from the spec.

    tests/galaxy/role_docs.py           write the files that differ (make role-docs)
    tests/galaxy/role_docs.py --check   write nothing; exit 1 naming each stale file (tests/unit/galaxy/)
"""

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "make role-docs"


def notice(sources, pronoun):
    return "Generated from %s by `%s` (tests/galaxy/role_docs.py): edit %s instead." % (sources, COMMAND, pronoun)


# Ansible's documentation markup as Markdown; as in ansible-doc, a form ends at its first ")".
MARKUP = [
    (re.compile(r"\bL\(([^)]*?),\s*([^)]*)\)"), r"[\1](\2)"),
    (re.compile(r"\bU\(([^)]*)\)"), r"<\1>"),
    (re.compile(r"\bI\(([^)]*)\)"), r"*\1*"),
    (re.compile(r"\bB\(([^)]*)\)"), r"**\1**"),
    (re.compile(r"\b(?:C|O|V|M|E|RV|P)\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"\bHORIZONTALLINE\b"), "---"),
]


def markdown(text):
    text = " ".join(str(text).split())
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    return text


def paragraphs(value):
    """A description (a string or a list of them) as Markdown paragraphs."""
    return [markdown(item) for item in (value if isinstance(value, list) else [value] if value else [])]


def sentence(text):
    text = markdown(text)
    return text if text.endswith((".", "!", "?")) else text + "."


def code(text):
    return "`` %s ``" % text if "`" in text else "`%s`" % text


def show_default(value):
    if isinstance(value, str):
        return code(value) if value else '`""`'
    return code(yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("\n..."))


def cell(text):
    """Text that stays inside its table cell: a pipe escaped, a line break as <br>."""
    return text.replace("|", "\\|").replace("\n", "<br>")


def rows(options, prefix=""):
    """A table row per option (type, default or *required*, description, choices); suboptions follow as parent.child."""
    for name, option in options.items():
        kind = option.get("type", "str") + (" of %s" % option["elements"] if "elements" in option else "")
        default = "*required*" if option.get("required") else show_default(option["default"]) if "default" in option \
            else ""
        text = " ".join(paragraphs(option.get("description")))
        if option.get("choices"):
            text += " Choices: %s." % ", ".join(code(str(choice)) for choice in option["choices"])
        yield "| %s | %s | %s | %s |" % (code(prefix + name), kind, cell(default), cell(text.strip()))
        yield from rows(option.get("options", {}), prefix + name + ".")


def table(options):
    return ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |", *rows(options)]


def readme(role, specs):
    main = specs["main"]
    lines = ["# dgxspark.ds41f.%s" % role, "", "<!-- %s -->" % notice("meta/argument_specs.yml", "that"), "",
             sentence(main["short_description"]), "", *("- " + p for p in paragraphs(main.get("description"))), ""]
    if (ROOT / "playbooks" / (role + ".yml")).exists():
        lines.append("Run it through its stage playbook, which first validates the site and the recipe on the "
                     "controller: `ansible-playbook -i inventory dgxspark.ds41f.%s` ([install](../../docs/install.md))."
                     % role)
    if (ROOT / "docs" / "stages" / (role + ".md")).exists():
        lines.append("The stage's guide: [docs/stages/%s.md](../../docs/stages/%s.md)." % (role, role))
    lines += ["", "Variables marked *required* are recipe values: the collection's `group_vars/all/` sets them and a "
              "site overrides them ([site file](../../docs/site-file.md)). Validation checks every variable against "
              "this spec before any host is touched.", "", "## Variables", "", *table(main.get("options", {}))]
    for name, spec in specs.items():
        if name != "main":
            lines += ["", "## Entry point `%s`" % name, "",
                      "`tasks_from: %s`: %s" % (name, sentence(spec["short_description"])),
                      *(["", *("- " + item for item in paragraphs(spec["description"]))] if spec.get("description")
                        else []),
                      *(["", *table(spec["options"])] if spec.get("options") else [])]
    return "\n".join(lines) + "\n"


def meta_main(specs, galaxy):
    """Collection-role metadata: what Galaxy shows for the role, and nothing standalone roles need."""
    info = {
        "standalone": False,
        "description": markdown(specs["main"]["short_description"]),
        "author": ", ".join(galaxy["authors"]),
        "license": " OR ".join(galaxy["license"]),
    }
    body = yaml.safe_dump({"galaxy_info": info, "dependencies": []}, sort_keys=False, width=120)
    return "---\n# %s\n%s" % (notice("meta/argument_specs.yml and galaxy.yml", "those"), body)


def generated():
    """{path: text} for every role."""
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    files = {}
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role_dir = spec_file.parents[1]
        specs = yaml.safe_load(spec_file.read_text())["argument_specs"]
        files[role_dir / "README.md"] = readme(role_dir.name, specs)
        files[role_dir / "meta" / "main.yml"] = meta_main(specs, galaxy)
    return files


def stale_files():
    return {path: text for path, text in generated().items() if not path.exists() or path.read_text() != text}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file differs")
    args = parser.parse_args(argv)
    stale = stale_files()
    if args.check:
        if stale:
            print("stale, run `%s`: %s" % (COMMAND, " ".join(str(p.relative_to(ROOT)) for p in stale)), file=sys.stderr)
        return 1 if stale else 0
    for path, text in stale.items():
        path.write_text(text)
        print("wrote %s" % path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
