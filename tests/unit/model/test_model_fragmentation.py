"""Fragmentation readings parsed from recorded e2fsprogs output (tests/fixtures/fragmentation/SOURCE.md)."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import fragmentation as frag
from tests.conftest import FIXTURES

HERE = FIXTURES / "fragmentation"


def test_e4defrag_gives_the_extent_count_and_the_best_count():
    assert frag.parse_e4defrag((HERE / "e4defrag-c-v-6-extents.txt").read_text()) == (6, 1)
    assert frag.parse_e4defrag((HERE / "e4defrag-c-v-40-extents.txt").read_text()) == (40, 1)
    assert frag.parse_e4defrag("e4defrag 1.47.0 (5-Feb-2023)\nFilesystem is not ext4 filesystem\n") is None


def test_filefrag_gives_extent_counts_per_file():
    assert frag.parse_filefrag((HERE / "filefrag-two-files.txt").read_text()) == {
        "model-00001-of-00002.safetensors": 6, "model-00002-of-00002.safetensors": 40}


def test_the_filesystem_is_the_longest_mount_prefix():
    mounts = ("overlay / overlay rw 0 0\n/dev/vda /var/lib/docker ext4 rw 0 0\n"
              "/dev/nvme0n1p2 /var/lib/ds41f ext4 rw 0 0\ntmpfs /run tmpfs rw 0 0\n")
    assert frag.filesystem(mounts, "/var/lib/ds41f/models/x") == "ext4"
    assert frag.filesystem(mounts, "/var/lib/ds41f-other") == "overlay"
    assert frag.filesystem(mounts, "/run/x") == "tmpfs"


def test_unknown_layouts_are_never_reported_clean():
    rows = [{"path": "a", "extents": 1, "best": 1}, {"path": "b", "extents": 40, "best": 1},
            {"path": "c", "extents": 3, "best": None}]
    assert frag.report(rows) == {"fragmented": ["b"], "unknown": ["c"], "status": "fragmented"}
    assert frag.report(rows[:1] + rows[2:])["status"] == "unknown"
    assert frag.report(rows[:1])["status"] == "clean"
