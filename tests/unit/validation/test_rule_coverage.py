"""The new rules cover everything they manage, found from the specs and the recipe, not listed by hand: every recipe
variable is declared, every environment the recipe holds is checked, every size carries a declared form, every
name-like option follows the one character set, and the escape and the collection's own names pass."""

import copy

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import env_check, known_vars, recipe_forms, validation
from tests.conftest import ROOT

from .conftest import SPECS, collection_recipe, good_site, host_values, templated

DECLARED = {name: spec for options in SPECS.values() for name, spec in options.items()}
RECIPE = {name: value for name, (_, value) in collection_recipe().items()}
# Words that make a key a size (its last word), and words that put the unit in the name instead.
SIZE_WORDS = ("size", "memory", "shm", "cache", "memory_min", "memory_max", "memory_high", "memory_low")
UNIT_WORDS = ("bytes", "kbytes", "kib", "mib", "gib")


def problems_for(values, source="site vars:"):
    site = copy.deepcopy(good_site())
    if source == "site vars:":
        site["vars"] = values
        values = None
    hv = host_values(site, values)
    _, found = validation.check(site, list(hv), hv, SPECS, collection_recipe())
    return found


def test_every_variable_the_recipe_sets_is_declared_by_a_role():
    assert sorted(set(RECIPE) - set(DECLARED)) == []


def test_the_collection_s_own_internal_names_are_known():
    internal = validation.internal_names()
    # facts modules return, set_fact names, registered results and role vars, all read from the collection
    for name in ("ds41f_node", "ds41f_serve", "ds41f_qualify", "serve_spec", "fabric_check", "image_installed",
                 "kernel_boot", "host_baseline_reboot_required", "verify_checks", "serve__release",
                 "ds41f_recipe_files"):
        assert name in internal, name
    ours = sorted(n for n in internal if known_vars.looks_like_ours(n))
    assert problems_for({}, None) == []
    values = {name: None for name in ours if name not in DECLARED}  # as the action passes a name no role reads
    assert [p for p in problems_for(values, "group_vars") if p.field in values] == []


def test_the_site_s_own_names_pass_when_listed_and_only_then():
    assert [p.field for p in problems_for({"serve_mine": 1, "fabric_rack": "r1"})] == ["fabric_rack", "serve_mine"]
    assert problems_for({"serve_mine": 1, "fabric_rack": "r1",
                         "ds41f_site_variables": ["serve_mine", "fabric_rack"]}) == []
    assert problems_for({"my_own_var": 1, "ansible_user": "ubuntu"}) == []  # no collection prefix: not ours


def test_a_typo_names_the_closest_declared_name():
    found = problems_for({"serve_argz": ["--dtype", "bfloat16"]})
    assert str(found[0]).startswith("serve_argz: serve_argz is not a variable of this collection; did you mean "
                                    "serve_args?")
    assert "the site file's vars:" in str(found[0])


def recipe_envs():
    return [(field, env) for name in sorted(DECLARED) if name in RECIPE
            for field, env in env_check.mappings(name, RECIPE[name])]


def dict_keys_named_env(value, path):
    """Every mapping anywhere in the recipe under a key with 'env' as a word: what the walker must find."""
    if not isinstance(value, dict):
        return []
    out = [path] if env_check.is_env_name(path.rpartition(".")[2]) else []
    for key, item in value.items():
        out += dict_keys_named_env(item, "%s.%s" % (path, key))
    return out


def test_the_walker_finds_every_environment_of_the_recipe():
    found = {field for field, _ in recipe_envs()}
    assert {"serve_env", "model_serve_env", "serve_collective_env", "serve_sglang_env", "fabric_nccl_env_common",
            "fabric_nccl_env_direct", "fabric_nccl_env_ring", "serve_sparknet_env.common",
            "serve_shape_launch.tp3-triangle.env"} <= found
    named = {p for name in RECIPE for p in dict_keys_named_env(RECIPE[name], name)}
    # a mapping of environments (serve_sparknet_env) is covered through its members
    assert {p for p in named if not any(f == p or f.startswith(p + ".") for f in found)} == set()


def set_env(values, field, key, value):
    """The recipe variable of ``field`` with ``key: value`` added to that environment."""
    name, _, rest = field.partition(".")
    top = copy.deepcopy(values[name])
    env = top
    for part in rest.split(".") if rest else []:
        env = env[part]
    env[key] = value
    return {name: top}


ENV_FIELDS = [f for f, _ in recipe_envs()]


@pytest.mark.parametrize("field", ENV_FIELDS)
@pytest.mark.parametrize("key, value", [("BAD-KEY", "1"), ("GOOD_KEY", "a\nb"), ("GOOD_KEY", "a\0b"),
                                        ("NCCL_IB_HCA", "x"), ("SPARKNET_ROCE_GID_INDEX", "3")],
                         ids=["key with a dash", "value with a newline", "value with a NUL", "NCCL_IB_HCA",
                              "SPARKNET_ROCE_GID_INDEX"])
def test_every_environment_refuses_bad_syntax_and_topology_keys(field, key, value, no_contact):
    found = problems_for(set_env(RECIPE, field, key, value), "group_vars")
    assert "%s.%s" % (field, key) in {p.field for p in found}, [str(p) for p in found]
    assert no_contact == []


def options_with(specs_options, prefix=""):
    """(dotted name, spec) of every option and sub-option."""
    for name, spec in specs_options.items():
        yield prefix + name, spec
        yield from options_with(spec.get("options") or {}, prefix + name + ".")


ALL_OPTIONS = dict(o for options in SPECS.values() for o in options_with(options))


def recipe_leaves(value, path):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from recipe_leaves(item, "%s.%s" % (path, key))
    elif isinstance(value, list):
        for item in value:
            yield from recipe_leaves(item, path)
    else:
        yield path, value


def test_every_size_in_the_recipe_declares_its_form_or_names_its_unit():
    sizes, bare = set(), []
    defaults = {name: spec["default"] for name, spec in DECLARED.items() if "default" in spec}
    for name, value in dict(defaults, **RECIPE).items():
        for path, leaf in recipe_leaves(value, name):
            last = path.rpartition(".")[2]
            if env_check.is_env_name(path.split(".")[0]) or last.isupper():
                continue  # environments: the engine's own variables, each with its unit in its name
            if last.endswith(tuple("_" + w for w in UNIT_WORDS)):
                assert isinstance(leaf, (int, float)) and not isinstance(leaf, bool), path
            elif last.endswith(SIZE_WORDS) and (isinstance(leaf, int) or str(leaf)[:1].isdigit()):
                sizes.add(path)
                if "size" not in ALL_OPTIONS.get(path, {}):
                    bare.append(path)
    assert {"serve_memory", "serve_shm_size", "host_baseline_protected_services.memory_min"} <= sizes
    assert bare == []


SIZE_OPTIONS = sorted(name for name, spec in ALL_OPTIONS.items() if "size" in spec)


@pytest.mark.parametrize("name", SIZE_OPTIONS)
def test_every_declared_size_refuses_a_bare_number(name, no_contact):
    top, _, key = name.partition(".")
    value = copy.deepcopy(RECIPE[top])
    if key:
        value[0][key] = "64"
        field = "%s[0].%s" % (top, key)
    else:
        value, field = "64", top
    found = problems_for({top: value})
    assert any(p.field == field and "bare number" in p.message for p in found), [str(p) for p in found]
    good = recipe_forms.SIZES[ALL_OPTIONS[name]["size"]][2]
    assert recipe_forms.size_problem(good, ALL_OPTIONS[name]["size"]) is None
    assert no_contact == []


NAME_OPTIONS = sorted(name for name, spec in ALL_OPTIONS.items() if spec.get("name"))


def test_name_options_cover_served_release_and_container_names():
    assert {"serve_served_names", "ds41f_release", "serve_sglang_release", "serve_container_name",
            "serve_boot_markers", "serve_patched_flags"} <= set(NAME_OPTIONS)


@pytest.mark.parametrize("name", NAME_OPTIONS)
@pytest.mark.parametrize("bad", ["..", ".", "a b", "a/b", "x\n", "-lead", ""])
def test_every_declared_name_refuses_what_cannot_reach_a_url_or_path(name, bad):
    spec = ALL_OPTIONS[name]
    value = {"str": bad, "list": [bad], "dict": {bad: []}}[spec["type"]]
    field = {"str": name, "list": name + "[0]", "dict": "%s[%r]" % (name, bad)}[spec["type"]]
    problems = validation.recipe.check_value(name, value, spec, "spec")
    assert field in {p.field for p in problems}, [str(p) for p in problems]


def test_the_recipe_s_own_names_and_sizes_pass():
    problems = [p for p in validation.recipe.check_vars(templated(RECIPE), SPECS) if p.field.split("[")[0].split(".")[0]
                in set(NAME_OPTIONS) | {s.split(".")[0] for s in SIZE_OPTIONS}]
    assert problems == []


def test_the_docker_daemon_settings_default_to_docker_s_own():
    spec = yaml.safe_load((ROOT / "roles" / "host_baseline" / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options["host_baseline_docker_bip"]["default"] == ""
    assert options["host_baseline_docker_address_pools"]["default"] == []
    # A bip the recipe states replaces the default bridge: 172.17/16 is then free for the fabric.
    site = good_site()
    site["fabric_pool"] = "172.17.0.0/16"
    site["vars"] = {"host_baseline_docker_bip": "172.26.0.1/16"}
    hv = host_values(site)
    assert validation.check(site, list(hv), hv, SPECS, collection_recipe())[1] == []


def test_tailscale_s_range_is_refused_only_when_the_baseline_keeps_tailscale():
    site = good_site()
    site["fabric_pool"] = "100.64.0.0/16"
    assert [p.field for p in problems_for({}, None)] == []
    hv = host_values(site)
    assert [p.field for p in validation.check(site, list(hv), hv, SPECS, collection_recipe())[1]] == ["fabric_pool"]
    site["vars"] = {"host_baseline_protected_services": [{"name": "ssh.service", "memory_min": "128M",
                                                          "oom_score_adjust": -900}]}
    hv = host_values(site)
    assert validation.check(site, list(hv), hv, SPECS, collection_recipe())[1] == []


def test_the_run_switches_the_cli_and_the_doctor_pass_are_declared():
    # ds41f doctor --collective adds -e '{"ds41f_collective": true}', --deep '{"ds41f_deep": true}'; doctor.yml sets
    # serve_report_only for its audit of the serve stage
    cli = (ROOT / "ds41f" / "cli.py").read_text()
    assert '{"ds41f_collective": true}' in cli and '{"ds41f_deep": true}' in cli
    assert problems_for({"ds41f_collective": True, "serve_report_only": True, "ds41f_deep": True}) == []


def test_an_environment_problem_never_shows_the_value():
    found = problems_for({"serve_env": {"HF_TOKEN": "hf_s3cret\nx", "API_KEY": "k3y\0"}})
    assert {p.field for p in found} >= {"serve_env.HF_TOKEN", "serve_env.API_KEY"}
    assert not any("s3cret" in str(p) or "k3y" in str(p) for p in found), [str(p) for p in found]
