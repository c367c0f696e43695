"""The node-to-node share and its client, for real over loopback HTTP (no node needed)."""

import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils import transfer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import checkpoint  # noqa: E402

TOKEN = "t0ken"


@pytest.fixture
def source(tmp_path):
    root = checkpoint.write(tmp_path / "src", shards=3, shard_mib=2, seed=11)
    made, _ = mf.make(str(root), "r", "0123456", 2)
    return str(root), made


def start(share):
    port = share.bind(0, host="127.0.0.1")
    result = {}
    thread = threading.Thread(target=lambda: result.update(share.serve()), daemon=True)
    thread.start()
    return port, thread, result


def share_of(root, made, clients=("child",), **kw):
    files = {e["path"]: e["size"] for e in made["files"]}
    return transfer.Share("parent", TOKEN, list(clients), root=root, files=files, idle_timeout=kw.pop("idle", 30), **kw)


def test_a_child_receives_every_file_verified_and_the_share_ends_when_it_is_done(source, tmp_path):
    root, made = source
    port, thread, result = start(share_of(root, made))
    peer = transfer.dial("parent", [], "127.0.0.1", port, TOKEN, "child")
    assert peer.via.startswith("management 127.0.0.1")
    seen = []
    got = transfer.fetch_files(peer, str(tmp_path / "dst"), made["files"], TOKEN, "child", streams=3,
                               verified=seen.append)
    transfer.done(peer, TOKEN, "child")
    thread.join(10)
    assert sorted(seen) == sorted(f["path"] for f in made["files"])
    assert sum(got.values()) == made["total_bytes"]
    assert mf.check(str(tmp_path / "dst"), made)["problems"] == []
    assert result["reason"] == "every child is done" and result["served_bytes"] == {"child": made["total_bytes"]}


def test_a_partial_file_resumes_where_it_stopped(source, tmp_path):
    root, made = source
    entry = next(f for f in made["files"] if f["path"].endswith(".safetensors"))
    dst = tmp_path / "dst"
    dst.mkdir()
    head = Path(root, entry["path"]).read_bytes()[:1_000_000]
    Path(dst, entry["path"] + mf.PART_SUFFIX).write_bytes(head)
    port, thread, _ = start(share_of(root, made))
    peer = transfer.dial("parent", [], "127.0.0.1", port, TOKEN, "child")
    got = transfer.fetch_files(peer, str(dst), [entry], TOKEN, "child")
    transfer.done(peer, TOKEN, "child")
    assert got == {entry["path"]: entry["size"] - len(head)}
    assert mf.sha256_file(str(dst / entry["path"])) == entry["sha256"]
    assert not Path(dst, entry["path"] + mf.PART_SUFFIX).exists()


def test_a_damaged_partial_file_is_caught_by_its_hash_and_fetched_whole(source, tmp_path):
    root, made = source
    entry = next(f for f in made["files"] if f["path"].endswith(".safetensors"))
    dst = tmp_path / "dst"
    dst.mkdir()
    Path(dst, entry["path"] + mf.PART_SUFFIX).write_bytes(b"\0" * 4096)  # not the file's first bytes
    port, _, _ = start(share_of(root, made))
    peer = transfer.dial("parent", [], "127.0.0.1", port, TOKEN, "child")
    got = transfer.fetch_files(peer, str(dst), [entry], TOKEN, "child")
    assert got == {entry["path"]: entry["size"]}
    assert mf.sha256_file(str(dst / entry["path"])) == entry["sha256"]


def test_a_relay_serves_a_file_only_once_it_is_verified_there(source, tmp_path):
    root, made = source
    entry = made["files"][0]
    ready = threading.Event()
    port, _, _ = start(share_of(root, made, ready=lambda rel: ready.is_set()))
    peer = transfer.dial("parent", [], "127.0.0.1", port, TOKEN, "child")
    threading.Timer(1.0, ready.set).start()
    start_time = time.monotonic()
    transfer.fetch_files(peer, str(tmp_path / "dst"), [entry], TOKEN, "child", wait_timeout=30)
    assert time.monotonic() - start_time >= 0.9
    with pytest.raises(transfer.TransferError, match="not verified here yet"):
        ready.clear()
        transfer.fetch_files(peer, str(tmp_path / "dst2"), [entry], TOKEN, "child", wait_timeout=1)


def test_a_file_that_arrives_corrupt_is_named(source, tmp_path):
    root, made = source
    entry = dict(made["files"][0], sha256="0" * 64)  # the share sends bytes the manifest does not describe
    port, _, _ = start(share_of(root, made))
    peer = transfer.dial("parent", [], "127.0.0.1", port, TOKEN, "child")
    with pytest.raises(transfer.TransferError, match=entry["path"]):
        transfer.fetch_files(peer, str(tmp_path / "dst"), [entry], TOKEN, "child")
    assert not os.path.exists(tmp_path / "dst" / entry["path"])


def test_the_wrong_token_and_other_addresses_are_refused(source):
    root, made = source
    port, _, _ = start(share_of(root, made))
    with pytest.raises(transfer.TransferError, match="refuses this run"):
        transfer.dial("parent", [], "127.0.0.1", port, "stale-token", "child", wait=1)
    port2, _, _ = start(share_of(root, made, local_addresses=["10.12.1.1"]))
    with pytest.raises(transfer.TransferError, match="not an address this share serves on"):
        transfer.dial("parent", [], "127.0.0.1", port2, TOKEN, "child", wait=1)


def test_fabric_addresses_are_preferred_and_the_fallback_says_why(source):
    root, made = source
    port, _, _ = start(share_of(root, made))
    peer = transfer.dial("parent", ["127.0.0.1"], "127.0.0.2", port, TOKEN, "child")
    assert peer.via == "fabric 127.0.0.1"
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with pytest.raises(transfer.TransferError, match="cannot reach parent's share"):
        transfer.dial("parent", ["127.0.0.1"], None, closed, TOKEN, "child", wait=1)


def test_an_idle_share_ends_by_itself(source):
    root, made = source
    _, thread, result = start(share_of(root, made, idle=1))
    thread.join(10)
    assert result["reason"] == "idle for 1 s" and result["not_done"] == ["child"]
