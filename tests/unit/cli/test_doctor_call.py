"""`ds41f doctor`'s call: --check always, flags and `--` pass-through as a list, exit 1 on a drift error."""

import json

import pytest

from ds41f import cli, runs


@pytest.fixture
def calls(monkeypatch, tmp_path):
    made = []

    def fake_tee(name, argv, env=None):
        made.append((name, argv, env))
        return runs.Result(fake_tee.rc, tmp_path / "artifacts", 1.0)

    fake_tee.rc = 0
    monkeypatch.setattr(runs, "run_tee", fake_tee)
    return made, fake_tee, tmp_path


def test_doctor_passes_its_flags_and_what_follows_the_double_dash(calls, capsys):
    made, _, tmp_path = calls
    assert cli.main(["doctor", "-i", "inventories/ring4", "--tags", "fabric", "-e", '{"k": true}',
                     "--report-dir", str(tmp_path / "r"), "--", "-v", "--forks", "2"]) == 0
    name, argv, env = made[0]
    assert name == "doctor" and argv[0].endswith("/ansible-playbook") and argv[1].endswith("playbooks/doctor.yml")
    assert argv[2:] == ["-i", "inventories/ring4", "--check", "-e", '{"k": true}', "-v", "--forks", "2",
                        "--tags", "fabric"]
    assert env["DS41F_REPORT_DIR"] == str(tmp_path / "r")
    assert "ds41f doctor: exit 0 in 1 s; report: %s" % (tmp_path / "r") in capsys.readouterr().out


@pytest.mark.parametrize("errors, ansible_rc, rc", [(2, 2, 1), (0, 0, 0), (None, 4, 4)])
def test_doctor_exits_1_when_its_table_holds_an_error_else_ansibles_status(calls, errors, ansible_rc, rc):
    _, tee, tmp_path = calls
    tee.rc = ansible_rc
    report = tmp_path / "r"
    if errors is not None:
        report.mkdir()
        (report / "doctor.json").write_text(json.dumps({"counts": {"error": errors, "warn": 1}}))
    assert cli.main(["doctor", "-i", "inventories/ring4", "--report-dir", str(report)]) == rc
