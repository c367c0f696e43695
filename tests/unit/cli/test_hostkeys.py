"""Pinned host keys: the site's known_hosts read as OpenSSH reads it (plain and hashed entries, fingerprints as
ssh-keygen prints them), `ds41f hostkeys`' verdicts (new keys recorded, a changed key refused until accepted), and
the inventory plugin pointing every node's ssh at the file beside its site. Keys are real ones from ssh-keygen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import known_hosts as kh
from ds41f import cli, hostkeys

ROOT = Path(__file__).resolve().parents[3]


def new_key(folder, name, kind="ed25519"):
    """(type, base64 key, ssh-keygen's own fingerprint) of a fresh key pair."""
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)
    key_type, key = (folder / (name + ".pub")).read_text().split()[:2]
    printed = subprocess.run(["ssh-keygen", "-lf", str(path) + ".pub"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    return key_type, key, printed


@pytest.fixture
def keys(tmp_path):
    return {name: new_key(tmp_path, name) for name in ("dgx1", "dgx2", "dgx2-new")}


def test_fingerprints_are_the_ones_ssh_keygen_prints_on_the_nodes_console(tmp_path, keys):
    for _, key, printed in keys.values():
        assert kh.fingerprint(key) == printed
    ecdsa = new_key(tmp_path, "ecdsa", "ecdsa")
    assert kh.fingerprint(ecdsa[1]) == ecdsa[2]


def test_plain_and_hashed_entries_name_their_host_and_port(tmp_path, keys):
    t1, k1, _ = keys["dgx1"]
    t2, k2, _ = keys["dgx2"]
    plain = tmp_path / "known_hosts"
    plain.write_text("# a comment\n10.0.0.1 %s %s dgx1\n[10.0.0.2]:2222 %s %s\n@revoked 10.0.0.9 %s %s\n" % (
        t1, k1, t2, k2, t1, k1))
    hashed = tmp_path / "hashed"
    shutil.copy(plain, hashed)
    subprocess.run(["ssh-keygen", "-H", "-f", str(hashed)], check=True, capture_output=True)
    for path in (plain, hashed):
        text = path.read_text()
        assert kh.keys_of(text, "10.0.0.1") == {t1: k1}
        assert kh.keys_of(text, kh.host_token("10.0.0.2", 2222)) == {t2: k2}
        assert kh.keys_of(text, "10.0.0.2") == {} and kh.keys_of(text, "10.0.0.9") == {}  # another port; revoked
    assert kh.host_token("10.0.0.2", 22) == "10.0.0.2"
    text = plain.read_text()
    assert kh.lines_for(text, ["10.0.0.1"]) == ["10.0.0.1 %s %s dgx1" % (t1, k1)]
    rest = kh.without(text, "10.0.0.1")
    assert "# a comment" in rest and kh.keys_of(rest, "10.0.0.1") == {} and kh.keys_of(rest, "[10.0.0.2]:2222")


def test_new_nodes_are_recorded_unchanged_ones_kept_and_a_changed_key_refused_until_accepted(keys):
    t1, k1, f1 = keys["dgx1"]
    t2, k2, _ = keys["dgx2"]
    _, k2new, f2new = keys["dgx2-new"]
    nodes = [("dgx1", "10.0.0.1"), ("dgx2", "10.0.0.2")]
    first, report, ok = hostkeys.plan("", nodes, {"10.0.0.1": {t1: k1}, "10.0.0.2": {t2: k2}})
    assert ok and [v for _, v, _ in report] == ["new", "new"] and f1 in report[0][2]
    assert first.splitlines() == ["10.0.0.1 %s %s dgx1" % (t1, k1), "10.0.0.2 %s %s dgx2" % (t2, k2)]
    same, report, ok = hostkeys.plan(first, nodes, {"10.0.0.1": {t1: k1}, "10.0.0.2": {t2: k2}})
    assert ok and same == first and [v for _, v, _ in report] == ["same", "same"]
    seen = {"10.0.0.1": {t1: k1}, "10.0.0.2": {t2: k2new}}
    refused, report, ok = hostkeys.plan(first, nodes, seen)
    assert not ok and refused == first and report[1][1] == "changed"
    assert "CHANGED" in report[1][2] and f2new in report[1][2] and "--accept dgx2" in report[1][2]
    accepted, report, ok = hostkeys.plan(first, nodes, seen, accept={"dgx2"})
    assert ok and report[1][1] == "accepted" and kh.keys_of(accepted, "10.0.0.2") == {t2: k2new}
    assert kh.keys_of(accepted, "10.0.0.1") == {t1: k1}
    # a node that answers none of its pinned key types is no match either; one that does not answer is named
    _, report, ok = hostkeys.plan(first, nodes, {"10.0.0.1": {"ssh-rsa": "AAAA"}})
    assert not ok and [v for _, v, _ in report] == ["changed", "silent"]


def test_hostkeys_refuses_a_node_the_site_does_not_have(capsys):
    assert cli.main(["hostkeys", "-i", "inventories/ring4", "--accept", "dgx9"]) == 2  # refused before any scan
    assert "dgx9 is not in" in capsys.readouterr().err


def inventory(site_dir):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(site_dir), "--list"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=True)
    data = json.loads(done.stdout)
    return data["_meta"]["hostvars"]


def test_every_node_checks_its_host_key_against_the_known_hosts_beside_its_site(tmp_path, keys):
    site = tmp_path / "my site"
    site.mkdir()
    text = (ROOT / "inventories" / "lab" / "lab.spark.yml").read_text()
    (site / "lab.spark.yml").write_text(text + "vars:\n  ansible_ssh_common_args: -o ProxyJump=bastion\n")
    t1, k1, _ = keys["dgx1"]
    (site / "known_hosts").write_text("172.30.77.11 %s %s dgx1\n10.9.9.9 %s %s elsewhere\n" % (t1, k1, t1, k1))
    hostvars = inventory(site)
    pinned = str(site / "known_hosts")
    for host in ("dgx1", "dgx2", "dgx3", "dgx4"):
        args = hostvars[host]["ansible_ssh_common_args"]
        assert args.startswith("-o UserKnownHostsFile='%s'" % pinned) and args.endswith("-o ProxyJump=bastion")
    assert hostvars["dgx1"]["spark_known_hosts"] == ["172.30.77.11 %s %s dgx1" % (t1, k1)]  # the cluster's only
    assert hostvars["dgx1"]["spark_known_hosts_file"] == pinned
    with open(ROOT / "ansible.cfg") as cfg:
        text = cfg.read()
    assert "host_key_checking = True" in text and "-o StrictHostKeyChecking=yes" in text
