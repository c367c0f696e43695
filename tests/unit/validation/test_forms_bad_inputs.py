"""Every bad input made from the forms (forms_cases.py) is refused, naming its field, what reads it and the fix.

Each case is checked the way the validation checks a variable - its spec (type, control characters, its form),
and the lock-out rules over the recipe - on the recipe as the play sees it; then one run of the whole validation
per class holds one bad value for every variable of that class at once, and must name each of them. Secrets are
refused without their value in any message.
"""

import collections

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe, topology, validation

from . import forms_cases
from .conftest import SPECS, collection_recipe, good_site, host_values

SITE = good_site()
BASE = host_values(SITE)["dgx1"]
CLUSTER = topology.build(SITE)
SPEC_OF = {name: ("roles/%s/meta/argument_specs.yml" % role, spec) for role, options in SPECS.items()
           for name, spec in options.items()}
CASES = forms_cases.cases(BASE)


def refusals(name, value):
    """What the validation's per-variable checks and cross-field rules say of ``name`` set to ``value``."""
    values = dict(BASE, **{name: value})
    where, spec = SPEC_OF[name]
    return recipe.check_value(name, value, spec, where, "the site file's vars:", values) + [
        p for p in recipe.cross_checks(CLUSTER, values) if p.field.startswith(name)]


def test_every_generated_bad_input_is_refused_naming_its_field_and_fix():
    tried, missed = collections.Counter(), []
    for cls, name, value, field in CASES:
        tried[cls] += 1
        found = [p for p in refusals(name, value) if p.field.startswith(field)]
        if not found or not all(p.fix for p in found):
            missed.append((cls, name, value))
    assert missed == [], "%d of %d not refused: %s" % (len(missed), len(CASES), missed[:10])
    assert sum(tried.values()) > 1000 and len(tried) > 50, tried


def test_a_form_s_refusal_names_the_form_and_what_reads_it():
    for cls, name, value, field in CASES:
        if cls.startswith("form: ") and SPEC_OF[name][1].get("form") == cls[6:]:
            messages = [p.message for p in refusals(name, value) if p.field.startswith(field)]
            assert any("declares Form: %s" % cls[6:] in m and "read by " in m for m in messages), (name, value,
                                                                                                   messages)


def test_a_control_character_is_named_by_its_code_point():
    for cls, name, value, _ in CASES:
        if cls == "control character":
            assert any("holds U+" in p.message for p in refusals(name, value)), (name, value)


def test_a_secret_is_refused_without_its_value():
    cases = [c for c in CASES if c[0] == "secret"]
    assert len(cases) >= 8
    for _, name, value, _ in cases:
        problems = refusals(name, value)
        assert problems, value
        for problem in problems:
            assert "4242" not in str(problem), str(problem)
            assert recipe.SECRET in problem.message or "holds U+" in problem.message


def test_a_lock_out_names_its_consequence():
    for cls, name, value, _ in CASES:
        if cls.startswith("lock-out"):
            messages = [p.message for p in refusals(name, value)]
            assert any("only a console reaches the node" in m for m in messages), (name, value, messages)


def test_the_recipe_and_every_example_value_pass_their_forms():
    problems = [p for name in SPEC_OF if name in BASE for p in refusals(name, BASE[name])]
    assert problems == []


@pytest.mark.parametrize("cls", sorted({c[0].split(":")[0] for c in CASES}))
def test_the_whole_validation_names_every_bad_variable_of_a_class_at_once(cls):
    """One bad value per variable of the class, all in one site: the play's check lists each of them."""
    chosen = {}
    for case_cls, name, value, field in CASES:
        if case_cls.split(":")[0] == cls and name not in chosen and name in BASE:
            chosen[name] = (value, field)
    values = {host: dict(v, **{n: val for n, (val, _) in chosen.items()}) for host, v in host_values(SITE).items()}
    _, problems = validation.check(SITE, list(values), values, SPECS, collection_recipe())
    fields = {p.field for p in problems}
    assert all(any(f.startswith(field) for f in fields) for _, field in chosen.values()), (
        sorted(set(chosen) - {f.split(".")[0].split("[")[0] for f in fields}))
