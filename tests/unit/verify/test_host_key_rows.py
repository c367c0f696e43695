"""A node whose SSH host key is not the pinned one, or that has none pinned, is one row about its host key (as
data), whose fix names the site folder ssh named and how to accept a key after checking it; `ds41f status` says the
same. The messages are ansible's own, recorded on a lab (tests/fixtures/doctor/SOURCE.md)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift
from ds41f.day2 import status
from tests.conftest import FIXTURES

RECORDED = {name: json.loads((FIXTURES / "doctor" / "hostkey" / ("unreachable-%s.json" % name)).read_text())
            for name in ("changed", "unpinned")}


def test_a_changed_host_key_is_a_row_about_the_nodes_key_with_the_accept_fix_for_its_site():
    event = RECORDED["changed"]
    r = drift.unreachable_row(event["host"], event["task"], {"msg": event["msg"], "unreachable": True}, 15)
    assert r["object"] == {"node": "dgx2", "kind": "host key", "name": "dgx2"} and r["severity"] == "error"
    assert r["found"].startswith("another key (ssh: REMOTE HOST IDENTIFICATION HAS CHANGED)")
    site = "-i /work/wt-keys/.lab/keys41b/inventory"  # the folder of the known_hosts ssh named
    assert "ds41f hostkeys %s --check" % site in r["fix"]
    assert r["fix"].endswith("ds41f hostkeys %s --accept dgx2" % site)
    assert "`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on dgx2's console" in r["fix"]


def test_a_node_with_no_key_pinned_is_a_row_with_the_record_fix():
    event = RECORDED["unpinned"]
    r = drift.unreachable_row(event["host"], event["task"], {"msg": event["msg"], "unreachable": True}, 15)
    assert r["object"] == {"node": "dgx3", "kind": "host key", "name": "dgx3"}
    assert r["found"] == ("none pinned (ssh: No ED25519 host key is known for 172.30.241.13 and you have requested "
                          "strict checking.)")
    assert r["fix"].startswith("record it at first contact: ds41f hostkeys -i <site folder>")


@pytest.mark.parametrize("name, node, found", [("changed", "dgx2", "another key"), ("unpinned", "dgx3", "none pinned")])
def test_status_names_the_node_its_host_key_and_the_fix(name, node, found):
    event = RECORDED[name]
    lines, problems = status.report([], [(event["host"], event["task"], event["msg"])])
    assert lines == ["%s   not read: %s: host key %s" % (node, event["task"], lines[0].split(": host key ", 1)[1])]
    assert lines[0].split(": host key ", 1)[1].startswith(found)
    (problem,) = problems
    assert problem.startswith("%s: host key: %s" % (node, found)) and "Fix: " in problem and "ds41f hostkeys" in problem


def test_other_failures_keep_their_rows():
    r = drift.unreachable_row("dgx3", "t", {"msg": "Failed to connect to the host via ssh: ssh: connect to host "
                                                   "10.0.0.9 port 22: Connection refused"}, 15)
    # about the node itself (a frozen or unreachable node is one row), never about its host key
    assert r["object"] == {"node": "dgx3", "kind": "node", "name": "dgx3"} and r["expected"] == "reachable over SSH"
