"""Serve rules the validation play checks on the controller: the recipe as shipped passes, bad guards fail."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe as recipe_rules

from .conftest import cluster, load_recipe


def test_the_shipped_recipe_passes_for_every_shape():
    values = load_recipe()
    for shape in ("tp3-triangle", "tp3-triangle-4k", "tp4-ring", "tp8-switched"):
        problems = [p for p in recipe_rules.cross_checks(cluster(shape), values) if p.field.startswith("serve_")]
        assert problems == []


def test_a_per_shape_guard_must_keep_startup_above_steady():
    values = dict(load_recipe(), serve_guard_shapes={"tp4-ring": {"startup_gib": 4, "steady_gib": 4}})
    problems = [p for p in recipe_rules.cross_checks(cluster("tp4-ring"), values) if p.field.startswith("serve_")]
    assert [str(p) for p in problems] == [
        "serve_guard_shapes.tp4-ring: 4 GiB is not above the steady guard (4 GiB). Fix: the startup guard must "
        "exceed the steady one, e.g. 5 and 3."]
    # another shape's entry does not apply here
    assert [p for p in recipe_rules.cross_checks(cluster("tp3-triangle"), values) if p.field.startswith("serve_")] == []
