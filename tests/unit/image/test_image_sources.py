"""Pinned sources made into their locked trees with real git: the lab's source, its two-patch series."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import sources
from ds41f.lab import image_inputs

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "images" / "lab"
LOCK = yaml.safe_load((LAB / "lock.yml").read_text())


def run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, text=True, capture_output=True)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """images/lab/src/hello committed the way `ds41f lab image-inputs` does it, in a temporary folder."""
    monkeypatch.setattr(image_inputs, "OUT", tmp_path)
    return image_inputs.source_repo("hello", LOCK["sources"]["hello"]["commit"])


@pytest.fixture
def lock_folder(tmp_path):
    folder = tmp_path / "lock"
    shutil.copytree(LAB, folder, ignore=shutil.ignore_patterns("src"))
    return folder


def source(repo, **change):
    spec = dict(LOCK["sources"]["hello"], name="hello", url=str(repo),
                patches=["patches/hello/0001-Greet-as-the-ds41f-lab-image.patch",
                         "patches/hello/0002-Mark-the-version-as-patched-twice.patch"])
    spec.update(change)
    return spec


def test_the_pinned_commit_plus_the_series_is_the_locked_tree(repo, lock_folder, tmp_path):
    dest = tmp_path / "src" / "hello"
    done = sources.prepare(run, str(dest), source(repo), str(lock_folder))
    assert done == ["checked out hello at 644dcb2a0953", "applied 2 patches to hello"]
    assert (dest / "VERSION").read_text() == "hello 1.0+ds41f.2\n"
    assert "the ds41f lab image" in (dest / "hello.sh").read_text()
    assert sources.prepare(run, str(dest), source(repo), str(lock_folder)) == []  # already the locked tree


def test_a_patch_that_does_not_apply_stops_the_build_naming_it(repo, lock_folder, tmp_path):
    patch = lock_folder / "patches" / "hello" / "0002-Mark-the-version-as-patched-twice.patch"
    patch.write_text(patch.read_text().replace("-hello 1.0", "-hello 0.9"))
    with pytest.raises(sources.SourceError, match="0002-Mark-the-version-as-patched-twice.patch does not apply"):
        sources.prepare(run, str(tmp_path / "src" / "hello"), source(repo), str(lock_folder))


def test_a_tree_that_differs_stops_the_build_naming_both(repo, lock_folder, tmp_path):
    wrong = "0" * 40
    with pytest.raises(sources.SourceError, match="the tree is 8f8a3a78.* the lock expects %s" % wrong):
        sources.prepare(run, str(tmp_path / "src" / "hello"), source(repo, tree=wrong), str(lock_folder))


def test_a_commit_that_is_not_in_the_repository_is_named(repo, lock_folder, tmp_path):
    with pytest.raises(sources.SourceError, match="sources.hello: cannot fetch|is not in"):
        sources.prepare(run, str(tmp_path / "src" / "hello"), source(repo, commit="1" * 40), str(lock_folder))


def test_a_checkout_edited_by_hand_is_made_again(repo, lock_folder, tmp_path):
    dest = tmp_path / "src" / "hello"
    sources.prepare(run, str(dest), source(repo), str(lock_folder))
    (dest / "VERSION").write_text("edited\n")
    assert sources.prepare(run, str(dest), source(repo), str(lock_folder))[0].startswith("checked out")
    assert (dest / "VERSION").read_text() == "hello 1.0+ds41f.2\n"
