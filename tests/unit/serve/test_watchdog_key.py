"""The watchdog's own key: a pair made on the head with the real ssh-keygen (its private half never in a result), the
site's pinned host keys as its known_hosts, and on each worker one authorized_keys line that lets that key run the
one restart from the head's address - restricted, the rest of the file untouched. Every row names its object; a
worker's row while the head has no key names the head's key as its cause. The modules run as Ansible runs them."""

from __future__ import annotations

import json
import os
import stat
import subprocess

from tests.unit.host.test_single_call_modules import run

ORIGIN = {"node": "dgx1", "path": "/etc/ds41f/serve/watchdog/id_ed25519"}
PINNED = ["10.0.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBgHYe9u2Gm0bZ6T3y2m6nS1q6wJc1rXb2Vd8m7c4e5f dgx1",
          "10.0.0.12 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHg1uWb8V5s3n0F2lS7q6bJc1rXb2Vd8m7c4e5f0a1b2 dgx2"]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def objects(result):
    return [(r["object"]["kind"], r["object"]["name"]) for r in result["drift"]]


def test_the_pair_is_made_once_on_the_node_and_only_its_public_half_comes_back(tmp_path):
    folder = tmp_path / "serve" / "watchdog"
    args = {"dir": str(folder), "known_hosts": PINNED, "comment": "ds41f-watchdog@dgx1"}
    planned = run(tmp_path, "watchdog_key", args, check_mode=True)
    assert planned["changed"] and planned["public_key"] == "" and not folder.exists()
    assert objects(planned) == [("directory", str(folder)), ("key pair", str(folder / "id_ed25519")),
                                ("file", str(folder / "known_hosts"))]
    made = run(tmp_path, "watchdog_key", args)
    private = (folder / "id_ed25519").read_text()
    public = subprocess.run(["ssh-keygen", "-y", "-f", str(folder / "id_ed25519")], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert made["changed"] and made["public_key"] == public and public.startswith("ssh-ed25519 ")
    assert private.strip() not in json.dumps(made) and "PRIVATE KEY" not in json.dumps(made)
    assert (folder / "id_ed25519.pub").read_text() == public + "\n"
    assert (folder / "known_hosts").read_text() == "".join(line + "\n" for line in PINNED)
    assert (mode(folder), mode(folder / "id_ed25519"), mode(folder / "id_ed25519.pub"),
            mode(folder / "known_hosts")) == (0o700, 0o600, 0o644, 0o644)
    again = run(tmp_path, "watchdog_key", args)
    assert not again["changed"] and again["public_key"] == public and (folder / "id_ed25519").read_text() == private
    # one object changed is one row about it
    (folder / "known_hosts").write_text(PINNED[0] + "\n")
    assert objects(run(tmp_path, "watchdog_key", args, check_mode=True)) == [("file", str(folder / "known_hosts"))]
    # either half's mode, or a public half that is not the private one's: one row about the pair
    (folder / "id_ed25519").chmod(0o644)
    assert objects(run(tmp_path, "watchdog_key", args, check_mode=True)) == [
        ("key pair", str(folder / "id_ed25519")), ("file", str(folder / "known_hosts"))]
    run(tmp_path, "watchdog_key", args)
    (folder / "id_ed25519.pub").write_text("# ds41f mutation " + public + "\n")
    assert objects(run(tmp_path, "watchdog_key", args, check_mode=True)) == [("key pair", str(folder / "id_ed25519"))]
    assert run(tmp_path, "watchdog_key", args)["public_key"] == public  # the same pair, its public half written again
    (folder / "id_ed25519").unlink()
    lost = run(tmp_path, "watchdog_key", args, check_mode=True)
    assert lost["public_key"] == "" and objects(lost) == [("key pair", str(folder / "id_ed25519"))]
    remade = run(tmp_path, "watchdog_key", args)
    assert remade["public_key"] and remade["public_key"] != public  # a new pair: the workers' entries follow


def test_a_worker_lets_the_heads_key_run_the_one_restart_and_keeps_the_rest_of_its_file(tmp_path):
    keys = tmp_path / "root" / ".ssh" / "authorized_keys"
    keys.parent.mkdir(parents=True)
    keys.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyOperatorKeyOperatorKeyOp operator@laptop\n")
    keys.chmod(0o600)
    public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHeadKeyHeadKeyHeadKeyHeadKeyHeadKeyHe ds41f-watchdog@dgx1"
    args = {"public_key": public, "sources": ["10.0.0.11"], "command": "docker restart spark-ds41f",
            "authorized_keys": str(keys), "key_origin": ORIGIN}
    planned = run(tmp_path, "watchdog_access", args, check_mode=True)
    assert planned["changed"] and objects(planned) == [("authorized_key", str(keys))]
    assert planned["managed"] == [{"kind": "authorized_key", "name": str(keys), "marker": "ds41f-watchdog",
                                   "state": "present"}]
    done = run(tmp_path, "watchdog_access", args)
    line = ('restrict,from="10.0.0.11",command="docker restart spark-ds41f" ssh-ed25519 '
            "AAAAC3NzaC1lZDI1NTE5AAAAIHeadKeyHeadKeyHeadKeyHeadKeyHeadKeyHe ds41f-watchdog")
    assert done["changed"] and done["line"] == line
    assert keys.read_text().splitlines() == [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyOperatorKeyOperatorKeyOp operator@laptop", line]
    assert mode(keys) == 0o600
    assert not run(tmp_path, "watchdog_access", args)["changed"]
    # widened by hand (no restrict): one row about the entry, put back
    keys.write_text(keys.read_text().replace("restrict,", ""))
    assert objects(run(tmp_path, "watchdog_access", args, check_mode=True)) == [("authorized_key", str(keys))]
    run(tmp_path, "watchdog_access", args)
    assert keys.read_text().splitlines()[1] == line
    # switched off: only the marked line goes
    off = run(tmp_path, "watchdog_access", dict(args, state="absent"))
    assert off["changed"] and keys.read_text().splitlines() == [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyOperatorKeyOperatorKeyOp operator@laptop"]


def test_a_worker_whose_head_has_no_key_yet_names_the_heads_key_as_the_cause(tmp_path):
    keys = tmp_path / "authorized_keys"
    args = {"public_key": "", "sources": ["10.0.0.11"], "command": "docker restart spark-ds41f",
            "authorized_keys": str(keys), "key_origin": ORIGIN}
    (row,) = run(tmp_path, "watchdog_access", args, check_mode=True)["drift"]
    assert row["object"] == {"kind": "authorized_key", "name": str(keys)}
    assert row["cause"] == {"kind": "key pair", "name": "/etc/ds41f/serve/watchdog/id_ed25519", "node": "dgx1"}
    assert not keys.exists()
