"""Strict recipe checks: a value must already have the type a role declares (no coercion)."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe, topology

SPECS = {
    "kernel": {
        "kernel_reboot_ok": {"type": "bool", "default": False},
        "kernel_swap_gib": {"type": "int"},
        "kernel_flavour": {"type": "str", "choices": ["64k", "4k"]},
        "kernel_packages": {"type": "list", "elements": "str"},
    },
}


def fields(problems):
    return [p.field for p in problems]


@pytest.mark.parametrize("value", ["false", "no", "False", "0", 0, 1, None])
def test_a_boolean_must_be_a_boolean(value):
    problems = recipe.check_vars({"kernel_reboot_ok": value}, SPECS)
    assert fields(problems) == ["kernel_reboot_ok"]
    assert "declares type bool" in problems[0].message
    assert "without quotes" in problems[0].fix


@pytest.mark.parametrize("value", [True, False])
def test_real_booleans_pass(value):
    assert recipe.check_vars({"kernel_reboot_ok": value}, SPECS) == []


def test_a_quoted_number_and_a_boolean_number_are_refused():
    assert fields(recipe.check_vars({"kernel_swap_gib": "16"}, SPECS)) == ["kernel_swap_gib"]
    assert fields(recipe.check_vars({"kernel_swap_gib": True}, SPECS)) == ["kernel_swap_gib"]
    assert recipe.check_vars({"kernel_swap_gib": 16}, SPECS) == []


def test_choices_and_list_elements():
    assert "is not one of 64k, 4k" in str(recipe.check_vars({"kernel_flavour": "16k"}, SPECS)[0])
    assert fields(recipe.check_vars({"kernel_packages": ["a", 3]}, SPECS)) == ["kernel_packages[1]"]
    assert fields(recipe.check_vars({"kernel_packages": "a b"}, SPECS)) == ["kernel_packages"]


def test_variables_no_role_declares_are_left_alone():
    assert recipe.check_vars({"my_own_var": "anything"}, SPECS) == []


def test_guards_must_step_down_from_startup_to_steady():
    cluster = topology.build({"shape": "tp4-ring", "nodes": [
        {"name": "n%d" % i, "address": "192.168.9.%d" % i} for i in range(1, 5)]})
    problems = recipe.cross_checks(cluster, {"serve_guard_startup_gib": 3, "serve_guard_steady_gib": 3})
    assert fields(problems) == ["serve_guard_startup_gib"]
    assert recipe.cross_checks(cluster, {"serve_guard_startup_gib": 5, "serve_guard_steady_gib": 3}) == []
    assert fields(recipe.cross_checks(cluster, {"serve_max_model_len": 2 ** 21})) == ["serve_max_model_len"]
