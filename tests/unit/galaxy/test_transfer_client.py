"""The share client goes through ansible.module_utils.urls and never through a node's proxy settings."""

import sys
import threading
from pathlib import Path

from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf
from ansible_collections.dgxspark.ds41f.plugins.module_utils import transfer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import checkpoint  # noqa: E402


def test_a_proxy_in_the_environment_does_not_carry_node_to_node_streams(tmp_path, monkeypatch):
    root = checkpoint.write(tmp_path / "src", shards=2, shard_mib=1, seed=5)
    made, _ = mf.make(str(root), "r", "0123456", 2)
    share = transfer.Share("parent", "tok", ["child"], root=str(root),
                           files={e["path"]: e["size"] for e in made["files"]}, idle_timeout=30)
    port = share.bind(0, host="127.0.0.1")
    result = {}
    thread = threading.Thread(target=lambda: result.update(share.serve()), daemon=True)
    thread.start()
    # A proxy that does not exist (discard port): any request sent to it would fail.
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    peer = transfer.dial("parent", [], "127.0.0.1", port, "tok", "child", wait=5)
    got = transfer.fetch_files(peer, str(tmp_path / "dst"), made["files"], "tok", "child", streams=2)
    transfer.done(peer, "tok", "child")
    thread.join(10)
    assert sum(got.values()) == made["total_bytes"]
    assert mf.check(str(tmp_path / "dst"), made)["problems"] == []
    assert result["served_bytes"] == {"child": made["total_bytes"]}

