"""managed_files, run as Ansible runs a module (a subprocess with its JSON arguments), on files in a temp folder."""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

MODULE = ROOT / "plugins" / "modules" / "managed_files.py"


def run(tmp_path, files, check_mode=False, **extra):
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(extra, files=files, _ansible_check_mode=check_mode,
                                                               _ansible_diff=True)}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "collections"))
    done = subprocess.run([sys.executable, str(MODULE), str(argfile)], capture_output=True, text=True, env=env)
    return json.loads(done.stdout)


def test_writes_what_differs_then_nothing_and_check_mode_writes_nothing(tmp_path):
    keep, new = tmp_path / "keep.conf", tmp_path / "sub" / "new.sh"
    keep.write_text("a = 1\n")
    os.chmod(keep, 0o644)
    files = [{"path": str(keep), "content": "a = 1\n"}, {"path": str(new), "content": "#!/bin/sh\n", "mode": "0755"}]

    planned = run(tmp_path, files, check_mode=True)
    assert planned["changed"] and planned["changed_paths"] == [str(new)] and not new.exists()
    assert planned["drift"] == [{"setting": str(new), "expected": "present", "found": "absent",
                                 "fix": "write %s" % new}]

    done = run(tmp_path, files)
    assert done["changed_paths"] == [str(new)] and new.read_text() == "#!/bin/sh\n"
    assert oct(new.stat().st_mode & 0o777) == "0o755"
    assert run(tmp_path, files)["changed"] is False


def test_a_hand_edit_shows_its_first_differing_line_and_a_diff(tmp_path):
    conf = tmp_path / "sysctl.conf"
    conf.write_text("kernel.panic = 30\nkernel.panic_on_oops = 5\n")
    result = run(tmp_path, [{"path": str(conf), "content": "kernel.panic = 30\nkernel.panic_on_oops = 1\n"}],
                 check_mode=True)
    (drift,) = result["drift"]
    assert drift["expected"] == "line 2: kernel.panic_on_oops = 1"
    assert drift["found"] == "line 2: kernel.panic_on_oops = 5"
    assert result["diff"][0]["before"].endswith("= 5\n") and result["diff"][0]["after"].endswith("= 1\n")
    assert conf.read_text().endswith("= 5\n")


def test_a_mode_change_alone_is_drift_too(tmp_path):
    script = tmp_path / "health"
    script.write_text("x\n")
    os.chmod(script, 0o600)
    result = run(tmp_path, [{"path": str(script), "content": "x\n", "mode": "0755"}])
    assert result["drift"][0]["setting"] == "%s attributes" % script
    assert oct(script.stat().st_mode & 0o777) == "0o755"


def test_a_file_that_does_not_validate_is_never_put_in_place(tmp_path):
    conf = tmp_path / "sshd.conf"
    conf.write_text("good\n")
    result = run(tmp_path, [{"path": str(conf), "content": "bad\n", "validate": "grep -q good %s"}])
    assert result["failed"] and "does not validate" in result["msg"]
    assert conf.read_text() == "good\n" and sorted(os.listdir(tmp_path)) == ["args.json", "sshd.conf"]


def test_absent_removes_only_what_exists(tmp_path):
    there, gone = tmp_path / "a", tmp_path / "b"
    there.write_text("x")
    result = run(tmp_path, [{"path": str(there)}, {"path": str(gone)}], state="absent")
    assert result["changed_paths"] == [str(there)] and not there.exists()
    assert run(tmp_path, [{"path": str(there)}], state="absent")["changed"] is False
