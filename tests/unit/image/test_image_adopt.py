"""The two ways to the release image: the recipe's settings checked on the controller (through the whole
validation, with the collection's real argument specs), the release lock's gaps named, and the image IDs of a
real `docker save` tarball (tests/fixtures/image, recorded in the lab)."""

import copy
import io
import json
import tarfile

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import image_source, lockfile, validation
from tests.conftest import FIXTURES, ROOT
from tests.unit.validation.conftest import SPECS, collection_recipe, good_site, host_values

ID = "sha256:" + "1a" * 32
DIGEST = "sha256:" + "2b" * 32
TARBALL = {"image_source": "adopt", "image_adopt_tarball": "/srv/release/spark-ds41f-1030.tar", "image_adopt_id": ID}
REGISTRY = {"image_source": "adopt", "image_adopt_registry": "registry.site.example:5000/spark-ds41f",
            "image_adopt_digest": DIGEST, "image_adopt_id": ID}
SAVED = FIXTURES / "image" / "saved-by-id.tar"
SAVED_ID = (FIXTURES / "image" / "saved-by-id.id").read_text().strip()


def refused(overrides):
    """The fields the validation play names for this recipe (as group_vars of the site's inventory)."""
    site = good_site()
    _, problems = validation.check(site, [n["name"] for n in site["nodes"]], host_values(site, overrides), SPECS,
                                   collection_recipe())
    return sorted({p.field for p in problems}), [str(p) for p in problems]


@pytest.mark.parametrize("overrides", [{}, TARBALL, REGISTRY], ids=["build", "adopt tarball", "adopt registry"])
def test_each_way_alone_passes(overrides):
    assert refused(overrides) == ([], [])


BAD = [
    ("build with a tarball set", {"image_adopt_tarball": "/srv/x.tar"}, "image_adopt_tarball"),
    ("build with an id set", {"image_adopt_id": ID}, "image_adopt_id"),
    ("adopt naming no way", {"image_source": "adopt", "image_adopt_id": ID}, "image_source"),
    ("adopt naming both ways", dict(REGISTRY, image_adopt_tarball="/srv/x.tar"), "image_source"),
    ("tarball without an id", dict(TARBALL, image_adopt_id=""), "image_adopt_id"),
    ("registry without an id", dict(REGISTRY, image_adopt_id=""), "image_adopt_id"),
    ("registry without a digest", dict(REGISTRY, image_adopt_digest=""), "image_adopt_digest"),
    ("tarball with a digest", dict(TARBALL, image_adopt_digest=DIGEST), "image_adopt_digest"),
    ("adopt without a tag", dict(TARBALL, image_adopt_tag=""), "image_adopt_tag"),
    ("an unknown way", {"image_source": "pull"}, "image_source"),
    ("a short id", dict(TARBALL, image_adopt_id="sha256:1a2b3c"), "image_adopt_id"),
    ("an id without its algorithm", dict(TARBALL, image_adopt_id="1a" * 32), "image_adopt_id"),
    ("a digest with a newline", dict(REGISTRY, image_adopt_digest=DIGEST + "\n"), "image_adopt_digest"),
    ("a registry reference with a tag", dict(REGISTRY, image_adopt_registry="registry:5000/spark-ds41f:1030"),
     "image_adopt_registry"),
    ("a registry reference with a digest", dict(REGISTRY, image_adopt_registry="registry/spark-ds41f@" + DIGEST),
     "image_adopt_registry"),
    ("a relative tarball path", dict(TARBALL, image_adopt_tarball="release.tar"), "image_adopt_tarball"),
]


@pytest.mark.parametrize("overrides, field", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_contradicting_or_malformed_settings_are_refused_naming_the_field(overrides, field):
    fields, lines = refused(overrides)
    assert fields == [field], lines
    assert all(" Fix: " in line or "fix" in line.lower() for line in lines)


def test_the_rule_itself_sees_only_its_own_variables():
    assert image_source.problems({}) == []  # no image_source: the argument spec reports the missing variable
    assert [p.field for p in image_source.problems(dict(TARBALL, image_adopt_tag="spark-ds41f:1030"))] == []


def _nulls(data, path=""):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nulls(value, "%s.%s" % (path, key) if path else key)
    elif data is None:
        yield path


def test_the_release_lock_is_refused_naming_every_null_field():
    folder = ROOT / "images" / "spark-ds41f-1030"
    lock = yaml.safe_load((folder / "lock.yml").read_text())
    nulls = sorted(_nulls(lock))
    assert "sources.tilelang.commit" in nulls  # a gap the seeds leave
    with pytest.raises(lockfile.LockError) as caught:
        lockfile.load(lock, str(folder))
    named = {line.split(":")[0] for line in caught.value.problems}
    assert set(nulls) <= named, set(nulls) - named
    assert "sources.vllm.commit" in named and "'19f2c20e' is not a full 40-hex commit" in str(caught.value)


def test_a_real_docker_save_tarball_gives_its_image_id():
    assert image_source.archive_images(str(SAVED)) == {SAVED_ID: []}  # saved by ID: it carries no tag


def _tar(tmp_path, members):
    path = tmp_path / "image.tar"
    with tarfile.open(path, "w") as tar:
        for name, body in members.items():
            data = body.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_an_oci_layout_names_the_config_blob(tmp_path):
    """Docker 25+ writes the OCI layout: the config is blobs/sha256/<hex> (the layout of `docker save` there)."""
    with tarfile.open(SAVED) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    entry = copy.deepcopy(manifest[0])
    entry["Config"] = "blobs/sha256/" + SAVED_ID[7:]
    entry["RepoTags"] = ["spark-ds41f:spark-ds41f-1030"]
    path = _tar(tmp_path, {"manifest.json": json.dumps([entry])})
    assert image_source.archive_images(path) == {SAVED_ID: ["spark-ds41f:spark-ds41f-1030"]}


@pytest.mark.parametrize("members", [{"rootfs/etc/hostname": "x"}, {"manifest.json": "[]"},
                                     {"manifest.json": "not json"}], ids=["no manifest", "empty", "not json"])
def test_a_tarball_that_is_not_a_docker_save_is_refused(tmp_path, members):
    with pytest.raises(ValueError, match="image.tar"):
        image_source.archive_images(_tar(tmp_path, members))
