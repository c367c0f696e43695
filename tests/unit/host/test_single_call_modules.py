"""The modules that let a stage read a node in one call: package_purged, sshd_effective (host baseline),
api_key_file (serve), and the steps_differ filter that decides whether a stage converges after its audit.
Each module runs as Ansible runs it on a node (a Python process fed its arguments); the programs it calls are
small scripts in a temporary folder that print what the real ones print and log how they were called."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dgxspark.ds41f.plugins.filter.node_steps import steps_differ

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / "plugins" / "modules"


def run(tmp_path, name, args, check_mode=False, path=None):
    argfile = tmp_path / ("%s-args.json" % name)
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "collections"))
    if path:
        env["PATH"] = "%s:%s" % (path, env["PATH"])
    done = subprocess.run([sys.executable, str(MODULES / (name + ".py")), str(argfile)], capture_output=True,
                          text=True, env=env, timeout=60)
    return json.loads(done.stdout)


def program(folder, name, body):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def dpkg(tmp_path):
    """dpkg-query answering from a state file (package -> two-letter state), apt-get logging its calls."""
    bin_dir, states, calls = tmp_path / "bin", tmp_path / "states", tmp_path / "apt-calls"
    program(bin_dir, "dpkg-query", 'pkg="$3"; s=$(grep "^$pkg " %s | cut -d" " -f2)\n'
            '[ -n "$s" ] || { echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; }\n'
            'printf "%%s " "$s"\n' % states)
    program(bin_dir, "apt-get", 'echo "$@" >> %s\n' % calls)
    return bin_dir, states, calls


@pytest.mark.parametrize("state, found", [("ii", "installed"), ("rc", "removed, configuration files left")])
def test_a_package_that_is_there_is_reported_then_purged(tmp_path, dpkg, state, found):
    bin_dir, states, calls = dpkg
    states.write_text("nvidia-drm-options-modeset0 %s\n" % state)
    args = {"names": ["nvidia-drm-options-modeset0", "not-known"]}
    checked = run(tmp_path, "package_purged", args, check_mode=True, path=bin_dir)
    assert checked["changed"] and checked["purged"] == ["nvidia-drm-options-modeset0"] and not calls.exists()
    assert checked["drift"] == [{"setting": "package nvidia-drm-options-modeset0", "expected": "purged",
                                 "found": found, "fix": None,
                                 "action": "apt-get purge -y nvidia-drm-options-modeset0"}]
    done = run(tmp_path, "package_purged", args, path=bin_dir)
    assert done["changed"] and calls.read_text() == "purge -y nvidia-drm-options-modeset0\n"


def test_a_package_that_is_not_there_changes_nothing(tmp_path, dpkg):
    bin_dir, states, calls = dpkg
    states.write_text("other ii\nnvidia-drm-options-modeset0 un\n")
    done = run(tmp_path, "package_purged", {"names": ["nvidia-drm-options-modeset0"]}, path=bin_dir)
    assert not done["changed"] and done["purged"] == [] and not calls.exists()


SSHD_T = "port 22\nlogingracetime 30\nmaxstartups 64:30:128\npersourcemaxstartups 32\n"


def test_sshd_effective_passes_when_every_setting_is_in_force(tmp_path):
    sshd = program(tmp_path / "bin", "sshd", "printf '%s'\n" % SSHD_T)
    done = run(tmp_path, "sshd_effective", {"sshd": str(sshd), "settings": {
        "LoginGraceTime": 30, "MaxStartups": "64:30:128", "PerSourceMaxStartups": 32}})
    assert not done.get("failed") and done["differing"] == [] and done["changed"] is False


def test_sshd_effective_reports_an_overridden_setting_in_check_mode_and_fails_a_run(tmp_path):
    """Check mode (the doctor's audit) returns the row; a run stops on it. Which file decides the setting is
    test_sshd_config's (it reads files, not this machine's /etc/ssh)."""
    sshd = program(tmp_path / "bin", "sshd", "printf 'logingracetime 99\\nlogingracetime 30\\n'\n")
    args = {"sshd": str(sshd), "settings": {"LoginGraceTime": 30}}
    checked = run(tmp_path, "sshd_effective", args, check_mode=True)
    assert not checked.get("failed") and checked["differing"] == ["LoginGraceTime"]
    (row,) = checked["drift"]
    assert (row["setting"], row["expected"], row["object"]) == (
        "sshd effective LoginGraceTime", "30", {"kind": "sshd", "name": "LoginGraceTime"})
    assert row["found"].startswith("99 (sshd -T)")
    done = run(tmp_path, "sshd_effective", args)
    assert done["failed"] and "sshd -T does not show LoginGraceTime 30 (it shows 99)" in done["msg"]
    assert done["drift"] == checked["drift"]


def test_sshd_effective_fails_with_sshds_own_error(tmp_path):
    sshd = program(tmp_path / "bin", "sshd",
                   "echo '/etc/ssh/sshd_config line 3: Bad configuration option' >&2; exit 255\n")
    done = run(tmp_path, "sshd_effective", {"sshd": str(sshd), "settings": {"LoginGraceTime": 30}})
    assert done["failed"] and "Bad configuration option" in done["msg"]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def held_key(key_file):
    return key_file.read_text().removeprefix("VLLM_API_KEY=").strip()


def test_a_generated_key_is_made_once_and_kept_and_never_returned(tmp_path):
    key_file = tmp_path / "serve" / "api-key.env"
    checked = run(tmp_path, "api_key_file", {"path": str(key_file)}, check_mode=True)
    assert checked["changed"] and not key_file.parent.exists()
    made = run(tmp_path, "api_key_file", {"path": str(key_file)})
    key = held_key(key_file)
    assert made["changed"] and len(key) == 48 and key not in json.dumps(made)
    assert mode(key_file) == 0o600 and mode(key_file.parent) == 0o700
    again = run(tmp_path, "api_key_file", {"path": str(key_file)})
    assert not again["changed"] and held_key(key_file) == key
    key_file.chmod(0o644)
    seen = run(tmp_path, "api_key_file", {"path": str(key_file)}, check_mode=True)  # the doctor's view
    assert seen["drift"] == [{"setting": "%s attributes" % key_file, "expected": "0600 uid 0 gid 0",
                              "found": "0644 uid 0 gid 0", "fix": None,
                              "action": "chmod 0600 %s; chown root:root %s" % (key_file, key_file)}]
    assert key not in json.dumps(seen) and mode(key_file) == 0o644
    assert [(m["kind"], m["mode"]) for m in seen["managed"]] == [("directory", "0700"), ("file", "0600")]
    mended = run(tmp_path, "api_key_file", {"path": str(key_file)})
    assert mended["changed"] and held_key(key_file) == key and mode(key_file) == 0o600


def test_the_recipes_key_replaces_a_generated_one_and_never_comes_back_in_clear(tmp_path):
    key_file = tmp_path / "serve" / "api-key.env"
    run(tmp_path, "api_key_file", {"path": str(key_file)})
    done = run(tmp_path, "api_key_file", {"path": str(key_file), "recipe_key": "recipe-key-0123"})
    assert done["changed"] and key_file.read_text() == "VLLM_API_KEY=recipe-key-0123\n"
    assert "recipe-key-0123" not in json.dumps(done)
    assert done["drift"][0]["expected"] == "the recipe's key" and done["drift"][0]["found"] == "another key"
    assert not run(tmp_path, "api_key_file", {"path": str(key_file), "recipe_key": "recipe-key-0123"})["changed"]


@pytest.mark.parametrize("loss", ["deleted", "edited"])
def test_a_lost_generated_key_comes_back_from_the_running_engine_not_a_new_one(tmp_path, loss):
    """The doctor's fix for a key file that lost its key must not cut the running group off its own API."""
    key_file = tmp_path / "serve" / "api-key.env"
    run(tmp_path, "api_key_file", {"path": str(key_file)})
    key = held_key(key_file)
    env = json.dumps(["PATH=/usr/bin", "VLLM_API_KEY=" + key])
    docker = program(tmp_path / "bin", "docker", "[ \"$1\" = inspect ] && [ \"$4\" = spark-ds41f ] && echo '%s'\n"
                     % env)
    if loss == "deleted":
        key_file.unlink()
    else:
        key_file.write_text("# a hand edit VLLM_API_KEY=x\n")
    args = {"path": str(key_file), "container": "spark-ds41f"}
    seen = run(tmp_path, "api_key_file", args, check_mode=True, path=docker.parent)
    assert seen["drift"][0]["found"] == "no key" and "the running engine spark-ds41f" in seen["drift"][0]["action"]
    assert key not in json.dumps(seen)
    done = run(tmp_path, "api_key_file", args, path=docker.parent)
    assert done["changed"] and held_key(key_file) == key and key not in json.dumps(done)
    key_file.unlink()  # no engine running: a new key, as on the first run
    run(tmp_path, "api_key_file", dict(args, container="not-running"), path=docker.parent)
    assert len(held_key(key_file)) == 48 and held_key(key_file) != key


class Hostvars(dict):
    def __getitem__(self, host):
        return dict.get(self, host, {})


AUDIT_OK = {"changed": False, "results": [{"step": "a", "changed": False, "drift": []}]}


@pytest.mark.parametrize("dgx2, differs", [
    (AUDIT_OK, False),
    ({"changed": True, "results": [{"step": "a", "changed": True}]}, True),
    # changed_when/failed_when false in a run: the steps still say what the audit found
    ({"changed": False, "failed": False, "results": [{"step": "a", "changed": False, "failed": True}]}, True),
    ({"changed": False, "results": [{"step": "check", "changed": False, "drift": [], "failing": [3]}]}, True),
    ({"changed": False, "results": [{"step": "check", "changed": False, "drift": [{"setting": "x"}]}]}, True),
    (None, True),  # a node without an audit: nothing says it is right
])
def test_steps_differ_reads_every_nodes_audit(dgx2, differs):
    hostvars = Hostvars(dgx1={"_audit": AUDIT_OK}, dgx2={"_audit": dgx2} if dgx2 is not None else {})
    assert steps_differ(["dgx1", "dgx2"], hostvars, "_audit") is differs
    assert steps_differ(["dgx1"], hostvars, "_audit") is False
