"""`ds41f run` through the real CLI and the real ansible-playbook, against a localhost-only playbook: each call
gets exactly its own flags, every -e form arrives as the same variable, what follows `--` is passed as it is."""

import json
import os
import re

import pytest

from ds41f import cli, paths, runs

ECHO = """---
- name: Echo
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Ping (touches the connection)
      ansible.builtin.ping:
      when: ansible_connection | default("local") == "ssh"

    - name: What the play got
      ansible.builtin.debug:
        msg:
          k: "{{ k | default('UNDEFINED') }}"
          check: "{{ ansible_check_mode }}"
          names: "{{ vars.keys() | select('match', '^k') | list }}"
    - name: Tagged two
      ansible.builtin.debug:
        msg: two
      tags: [two]
"""


@pytest.fixture
def stage(monkeypatch, tmp_path):
    """A stage `echo` whose play runs on localhost only; run folders under tmp_path."""
    books = tmp_path / "playbooks"
    books.mkdir()
    (books / "echo.yml").write_text(ECHO)
    monkeypatch.setattr(paths, "PLAYBOOKS", books)
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
    return tmp_path


def ds41f_run(capsys, *args):
    """(exit status, the artifact folder the run printed, its results)."""
    rc = cli.main(["run", "echo", "-i", "localhost,"] + list(args))
    out = capsys.readouterr().out
    found = re.search(r"artifacts: (\S+) \(stdout, job_events/, rc, command\)", out)
    assert found, out
    result = runs.Result(rc, found.group(1), 0)
    return rc, result, out


@pytest.mark.parametrize("form, value", [
    ('{"k": true}', True),
    ('{"k":true}', True),
    ("k=v", "v"),
    ("@FILE", True),
], ids=["json", "compact-json", "key=value", "@file"])
def test_every_extra_vars_form_reaches_the_play_as_k(stage, capsys, form, value):
    if form == "@FILE":
        (stage / "vars.yml").write_text("k: true\n")
        form = "@%s" % (stage / "vars.yml")
    rc, result, out = ds41f_run(capsys, "-e", form)
    assert rc == 0, out
    got = result.task_results("What the play got")["localhost"]["msg"]
    assert got["k"] == value and got["names"] == ["k"]
    # ansible-playbook got the -e value as one argument, as typed
    assert json.loads((result.artifacts / "command").read_text())["command"][-2:] == ["-e", form]


def test_a_flag_given_once_is_absent_from_the_next_call(stage, capsys):
    rc, first, out = ds41f_run(capsys, "--check", "-e", '{"k": "once"}', "--", "--skip-tags", "two")
    assert rc == 0, out
    assert first.task_results("What the play got")["localhost"]["msg"] == {"k": "once", "check": True, "names": ["k"]}
    assert first.task_results("Tagged two") == {}

    rc, second, out = ds41f_run(capsys)
    assert rc == 0, out
    assert second.artifacts != first.artifacts
    assert second.task_results("What the play got")["localhost"]["msg"] == {"k": "UNDEFINED", "check": False,
                                                                           "names": []}
    assert second.task_results("Tagged two")["localhost"]["msg"] == "two"
    assert (second.artifacts / "rc").read_text().strip() == "0"


def test_what_follows_the_double_dash_goes_to_ansible_playbook_unchanged(stage, capsys):
    rc, result, out = ds41f_run(capsys, "--", "--tags", "two", "-v", "--forks", "3")
    assert rc == 0, out
    assert json.loads((result.artifacts / "command").read_text())["command"][-5:] == [
        "--tags", "two", "-v", "--forks", "3"]
    assert result.task_results("What the play got") == {}
    assert result.task_results("Tagged two")["localhost"]["msg"] == "two"


def test_ansible_playbooks_own_exit_status_is_passed_through(stage, capsys):
    # an unreachable host (ssh to a closed port on loopback): ansible-playbook exits 4, and so does ds41f run
    rc, result, out = ds41f_run(capsys, "-e", "ansible_connection=ssh", "-e", "ansible_host=127.0.0.1",
                                "-e", "ansible_port=9", "-e", "k=v")
    assert rc == 4, out
    assert (result.artifacts / "rc").read_text().strip() == "4"
    assert "ds41f run echo: exit 4" in out


def test_a_command_run_through_tee_keeps_its_output_rc_and_argv(capsys):
    result = runs.run_tee("tee", ["sh", "-c", "echo one; echo two >&2; exit 3"])
    assert result.rc == 3
    assert capsys.readouterr().out == "one\ntwo\n"
    assert (result.artifacts / "stdout").read_text() == "one\ntwo\n"
    assert (result.artifacts / "rc").read_text() == "3\n"
    assert json.loads((result.artifacts / "command").read_text()) == ["sh", "-c", "echo one; echo two >&2; exit 3"]


def test_run_folders_are_for_root_alone():
    folder = runs.new_folder("x")
    assert folder.stat().st_mode & 0o777 == 0o700 and runs.RUNS.stat().st_mode & 0o777 == 0o700


def test_run_folders_are_named_by_the_utc_stamp_then_the_command_and_pid():
    folder = runs.new_folder("doctor")
    stamp, name, pid = folder.name.split("-")
    assert re.fullmatch(r"[0-9]{8}T[0-9]{6}Z", stamp) and name == "doctor" and pid == str(os.getpid())
    assert runs.new_folder("doctor") != folder  # a second call in the same second gets its own folder
