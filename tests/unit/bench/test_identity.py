"""The run's identity: the node probe's output read back, and what a loopback server cannot say."""

import asyncio
import platform

from ds41f.bench import identity


def test_the_node_probe_reads_kernel_image_and_recipe_here():
    # The same one-line command ssh hands to a node's shell, run by this machine's shell (it only reads).
    got = asyncio.run(asyncio.wait_for(identity._probe("here", ["sh", "-c", identity.NODE_PROBE[0]]), 60))
    assert got["kernel"] == platform.release()
    assert "unknown" in got["image_id"] or got["image_id"].startswith("sha256:")
    assert got["recipe"] == {"unknown": "no /etc/ds41f/recipe.json on here"}  # no recipe on this machine


def test_a_loopback_server_says_why_cluster_fields_are_unknown():
    data = asyncio.run(asyncio.wait_for(identity.collect("http://127.0.0.1:9", None, "m", None, None, {}, True), 60))
    assert data["nodes"]["local"]["kernel"] == platform.release()
    assert data["config_hash"]["unknown"].startswith("no --inventory") and "unknown" in data["release"]
    assert "unknown" in data["server_version"] and "unknown" in data["shape"]
    assert data["client_commit"]  # a commit (with -dirty when the tree has changes) or why not
