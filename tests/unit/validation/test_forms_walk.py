"""Every variable a role renders declares the form of where it lands, so a new variable cannot skip validation.

The walk (plugins/plugin_utils/render_walk.py) parses every template under roles/*/templates and every string of
roles/*/tasks, handlers and vars with Jinja's own parser. Each variable an expression reads must be an option of a
role's argument spec that declares its form (recipe.has_form: a boolean, a ranged number, choices, a pin, a size,
a name or a Form line; a mapping read by key through its sub-option), or a name the collection sets itself
(role vars, set_fact, registered results, module facts, task vars, loop variables), the inventory's (spark_*),
or Ansible's and Jinja's own. Shell script templates quote every value they interpolate.
"""

import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import forms, recipe, validation
from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import render_walk
from tests.conftest import ROOT

# Ansible's magic variables and Jinja's globals the roles read (names Ansible itself sets).
ANSIBLE_NAMES = {"groups", "hostvars", "inventory_hostname", "item", "omit", "playbook_dir", "role_path", "lookup",
                 "query", "q", "now", "dict", "namespace", "range", "lipsum", "cycler", "joiner", "undef"}


def declared_options(root):
    """{option: spec with what its description declares} over every entry point of every role."""
    out = {}
    for path in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        for entry in yaml.safe_load(path.read_text())["argument_specs"].values():
            for name, spec in recipe._with_declared(entry.get("options") or {}).items():
                out.setdefault(name, []).append((path.parent.parent.name, spec))
    return out


def unformed(root):
    """[(variable, key, where, why)] of every rendered variable that declares no form or is not declared."""
    options = declared_options(root)
    own = validation.internal_names() | render_walk.locals_of(str(root))
    out = []
    for use in render_walk.uses(str(root)):
        if use.name in options:
            for role, spec in options[use.name]:
                sub = (spec.get("options") or {}).get(use.key) if use.key else None
                if not recipe.has_form(sub or spec):
                    out.append((use.name, use.key, use.where, "roles/%s declares no form" % role))
        elif not (use.name in own or use.name in ANSIBLE_NAMES or use.name.startswith(("spark_", "ansible_"))):
            out.append((use.name, use.key, use.where, "no role declares it"))
    return out


def test_every_rendered_variable_declares_the_form_of_its_destination():
    uses = render_walk.uses(str(ROOT))
    # The walk is not empty-handed: it reaches the root-run files the review named.
    dests = {u.dest for u in uses if u.dest}
    for path in ("/etc/ssh/sshd_config.d/01-ds41f-recovery.conf", "/etc/systemd/system.conf.d/95-ds41f-watchdog.conf",
                 "/etc/modprobe.d/95-ds41f-nvidia-drm.conf", "/etc/security/limits.d/95-ds41f-memlock.conf",
                 "/usr/local/libexec/ds41f-management-health", "/usr/local/sbin/ds41f-kernel-memory"):
        assert path in dests, path
    assert len({u.name for u in uses}) > 100
    assert unformed(ROOT) == []


def test_every_declared_option_declares_a_form_even_where_no_template_renders_it():
    """Options read by lookups and modules (the launch spec, the doctor) land too: each declares its form."""
    options = declared_options(ROOT)
    missing = [(role, name) for name, specs in options.items() for role, spec in specs if not recipe.has_form(spec)]
    assert missing == []
    # "as role R declares it": R declares it, with a form of its own
    for name, specs in options.items():
        for role, spec in specs:
            if spec.get("form") == "as role":
                owner = [s for r, s in specs if r == spec["form_arg"]]
                assert owner and recipe.has_form(owner[0]) and owner[0].get("form") != "as role", (role, name)


def test_a_new_variable_without_a_form_is_found(tmp_path):
    """Planted in a copy of the roles: a template that renders an undeclared variable and one without a form."""
    shutil.copytree(ROOT / "roles", tmp_path / "roles")
    (tmp_path / "roles" / "serve" / "templates" / "new.conf.j2").write_text(
        "[Service]\nEnvironment=X={{ serve_new_setting }}\nExecStart=/bin/true {{ serve_smoke_prompt }}\n")
    spec_path = tmp_path / "roles" / "serve" / "meta" / "argument_specs.yml"
    spec_path.write_text(spec_path.read_text().replace("          - 'Form: text.'\n", ""))
    render_walk.uses.cache_clear()
    try:
        found = {(name, why) for name, _, _, why in unformed(tmp_path)}
    finally:
        render_walk.uses.cache_clear()
    assert ("serve_new_setting", "no role declares it") in found
    assert ("serve_smoke_prompt", "roles/serve declares no form") in found


def test_every_declared_form_is_one_the_validation_knows():
    lines = [line for path in (ROOT / "roles").glob("*/meta/argument_specs.yml")
             for line in re.findall(r"- '(Form: [^']*)'", path.read_text())]
    assert len(lines) > 100
    assert all(forms.parse(line) for line in lines)
    with pytest.raises(ValueError):
        forms.parse("Form: no such form.")


SCRIPTS = sorted(p for p in (ROOT / "roles").glob("*/templates/*.j2")
                 if p.name.endswith(".sh.j2") or p.read_text().startswith("#!"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_scripts_quote_what_they_interpolate(path):
    """Each value a script template renders passes through quote, outside comments and double quotes (where a
    quoted word would not protect it), so a value is one shell word whatever it holds."""
    uses = [u for u in render_walk.uses(str(ROOT)) if u.where.endswith(path.name) and u.name != "ansible_managed"]
    assert uses and all(u.quoted for u in uses), [u for u in uses if not u.quoted]
    for line in path.read_text().splitlines():
        for match in re.finditer(r"\{\{(?! ansible_managed)", line):
            before = line[:match.start()]
            assert not before.lstrip().startswith("#"), "a value in a comment: %s" % line
            assert before.count('"') % 2 == 0, "a value inside double quotes: %s" % line


def render_script(name, values):
    from jinja2 import Environment

    env = Environment(keep_trailing_newline=True)
    env.filters["quote"] = lambda value: shlex.quote(str(value))  # ansible.builtin.quote, on its text
    return env.from_string(next(p for p in SCRIPTS if p.name == name).read_text()).render(
        dict(values, ansible_managed="managed"))


@pytest.mark.parametrize("unit", ["ssh.service; touch pwned", "$(touch pwned)", "x\ntouch pwned", "a'b\"c"])
def test_a_hostile_value_stays_one_argument_of_the_script(unit, tmp_path):
    """The health script run with stubs (ssh does not answer): systemctl gets the unit as one argument, and nothing
    the value holds runs, even a value the validation would refuse."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "timeout").write_text("#!/bin/sh\nexit 1\n")
    (stubs / "systemctl").write_text("#!/bin/sh\n[ \"$1\" = is-enabled ] && exit 1\nprintf '%%s\\0' \"$@\" >> "
                                     "%s\n" % (tmp_path / "calls"))
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    script = tmp_path / "health"
    script.write_text(render_script("management-health.sh.j2", {"host_baseline_health": {
        "timeout": 1, "ssh_port": 22, "ssh_unit": unit}}))
    proc = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          env={"PATH": "%s:/usr/bin:/bin" % stubs})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls").read_text().split("\0")[:-1] == ["restart", unit]
    assert not (tmp_path / "pwned").exists()
