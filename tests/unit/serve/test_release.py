"""Release records: a re-run writes nothing; rollback picks the newest record of another release or image."""

from ansible_collections.dgxspark.ds41f.plugins.modules import serve_release


def record(release, image_id, recipe="r", specs=None):
    return {"release": release, "image_id": image_id, "recipe": recipe, "specs": specs or {"dgx1": {"rank": 0}}}


def test_previous_is_the_newest_record_that_differs():
    a, b = record("lab-r1", "sha256:1"), record("lab-r2", "sha256:2")
    assert serve_release.previous_of([]) is None
    assert serve_release.previous_of([a]) is None
    assert serve_release.previous_of([a, b]) == a
    assert serve_release.previous_of([a, b, dict(b)]) == a  # a restart of b is not a release to go back to
    assert serve_release.previous_of([a, b, dict(a)]) == b  # after a rollback, rolling back again returns b
    assert serve_release.previous_of([a, record("lab-r1", "sha256:9")]) == a  # same name, other image


def test_the_same_start_is_not_recorded_twice(tmp_path):
    a = record("lab-r1", "sha256:1")
    serve_release.write(str(tmp_path), "20261130T000000Z-lab-r1.json", dict(a, time="t"))
    loaded = serve_release.load(str(tmp_path))
    assert [r["file"] for r in loaded] == ["20261130T000000Z-lab-r1.json"]
    assert serve_release.same_start(loaded[-1], a)
    assert not serve_release.same_start(loaded[-1], record("lab-r1", "sha256:1", specs={"dgx1": {"rank": 1}}))
