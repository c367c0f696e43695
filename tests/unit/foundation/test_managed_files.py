"""managed_files, run as Ansible runs a module (a subprocess with its JSON arguments), on files in a temp folder."""

import grp
import json
import os
import pwd
import subprocess
import sys

from ansible_collections.dgxspark.ds41f.plugins.action.managed_files import DIRECTORY_KEYS, file_problems
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
                                 "fix": None, "action": "write %s" % new, "object": {"kind": "file", "name": str(new)}}]

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


def test_folders_are_created_first_then_left_alone_and_check_mode_creates_none(tmp_path):
    folder, conf = tmp_path / "etc" / "ds41f", tmp_path / "etc" / "ds41f" / "site.json"
    me = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    directories = [{"path": str(folder), "mode": "0750", "owner": me[0], "group": me[1]}]
    files = [{"path": str(conf), "content": "{}\n", "owner": me[0], "group": me[1]}]

    planned = run(tmp_path, files, check_mode=True, directories=directories)
    assert planned["changed_paths"] == [str(folder), str(conf)] and not folder.exists()
    assert planned["drift"][0] == {"setting": str(folder), "expected": "folder 0750 %s:%s" % me, "found": "absent",
                                   "fix": None, "action": "create folder %s" % folder,
                                   "object": {"kind": "directory", "name": str(folder)}}

    done = run(tmp_path, files, directories=directories)
    assert done["changed_paths"] == [str(folder), str(conf)] and conf.read_text() == "{}\n"
    assert oct(folder.stat().st_mode & 0o777) == "0o750"
    again = run(tmp_path, files, check_mode=True, directories=directories)
    assert again["changed"] is False
    # in sync or not, every object it manages is declared, with the state it keeps (the doctor's `managed`)
    assert again["managed"] == planned["managed"] == [
        {"kind": "directory", "name": str(folder), "mode": "0750", "owner": me[0], "group": me[1]},
        {"kind": "file", "name": str(conf), "mode": "0644", "owner": me[0], "group": me[1]}]


def test_a_folder_with_another_mode_is_drift_of_its_own(tmp_path):
    folder = tmp_path / "lib"
    folder.mkdir(mode=0o700)
    me = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    directories = [{"path": str(folder), "owner": me[0], "group": me[1]}]
    planned = run(tmp_path, [], check_mode=True, directories=directories)
    assert planned["drift"] == [{"setting": "%s attributes" % folder, "expected": "folder 0755 %s:%s" % me,
                                 "found": "folder 0700 %s:%s" % me, "fix": None,
                                 "action": "chmod/chown %s" % folder,
                                 "object": {"kind": "directory", "name": str(folder)}}]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert run(tmp_path, [], directories=directories)["changed_paths"] == [str(folder)]
    assert oct(folder.stat().st_mode & 0o777) == "0o755"


def test_a_file_where_a_folder_belongs_fails_and_names_it(tmp_path):
    where = tmp_path / "ds41f"
    where.write_text("x")
    result = run(tmp_path, [], directories=[{"path": str(where)}])
    assert result["failed"] and result["msg"].startswith("directories[0].path: %s is not a folder" % where)


def test_the_action_refuses_an_unknown_folder_setting():
    assert file_problems([{"path": "/etc/ds41f", "content": "x"}], False, "directories", DIRECTORY_KEYS,
                         "folder") == ("directories[0].content: is not a folder setting. Fix: use path, mode, owner, "
                                       "group.")


def test_a_template_gets_ansible_templates_header_unless_the_play_sets_ansible_managed(tmp_path):
    """Rendered on the controller by the action plugin, written on localhost: the header comes from no
    ansible-core setting (DEFAULT_MANAGED_STR goes in 2.23), and a play's own ansible_managed wins."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "unit.conf.j2").write_text("# {{ ansible_managed }}\nvalue={{ value }}\n")
    out = tmp_path / "out"
    play = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": [
        {"name": "Default header", "dgxspark.ds41f.managed_files": {"files": [
            {"path": str(out / "default.conf"), "template": "unit.conf.j2", "vars": {"value": 1}}],
            "directories": [{"path": str(out)}]}},
        {"name": "The play's header", "vars": {"ansible_managed": "site header"}, "dgxspark.ds41f.managed_files": {
            "files": [{"path": str(out / "own.conf"), "template": "unit.conf.j2", "vars": {"value": 2}}]}}]}]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_DEPRECATION_WARNINGS="true", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           str(tmp_path / "play.yml")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (out / "default.conf").read_text() == "# Ansible managed\nvalue=1\n"
    assert (out / "own.conf").read_text() == "# site header\nvalue=2\n"
    assert "DEFAULT_MANAGED_STR" not in done.stdout + done.stderr
