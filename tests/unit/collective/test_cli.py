"""`ds41f collective` and `ds41f doctor --collective`: their ansible-playbook calls and exit statuses."""

import json

import pytest

from ds41f import cli, runs


@pytest.fixture
def calls(monkeypatch, tmp_path):
    made = []

    def fake_run(name, argv, env=None, quiet=False):
        made.append((name, argv))
        if fake_run.verdict is not None:
            report = json.loads(argv[argv.index("-e") + 1])["collective_report"]
            with open(report, "w") as f:
                json.dump(fake_run.verdict, f)
        return runs.Result(fake_run.rc, tmp_path / "artifacts", 1.0)

    def fake_tee(name, argv, env=None):
        made.append((name, argv))
        return runs.Result(0, tmp_path / "artifacts", 1.0)

    fake_run.rc, fake_run.verdict = 0, None
    monkeypatch.setattr(runs, "run_playbook", fake_run)
    monkeypatch.setattr(runs, "run_tee", fake_tee)
    return made, fake_run, tmp_path


def test_collective_runs_its_playbook_with_the_settings_as_variables(calls):
    made, _, tmp_path = calls
    report = tmp_path / "v.json"
    assert cli.main(["collective", "-i", "inventories/ring4", "--port", "10001", "--timeout", "30", "--limit",
                     "dgx1", "--report", str(report), "--", "-v"]) == 0
    name, argv = made[0]
    assert name == "collective" and argv[0].endswith("playbooks/collective.yml")
    assert argv[1:3] == ["-i", "inventories/ring4"] and argv[-1] == "-v"
    assert json.loads(argv[argv.index("-e") + 1]) == {
        "collective_report": str(report), "serve_collective_master_port": 10001, "serve_collective_timeout_s": 30}


@pytest.mark.parametrize("ok, ansible_rc, rc", [(True, 0, 0), (False, 2, 1), (None, 4, 4)])
def test_collective_exits_1_when_the_verdict_names_a_rank(calls, capsys, ok, ansible_rc, rc):
    _, fake, tmp_path = calls
    fake.rc = ansible_rc
    fake.verdict = None if ok is None else {"ok": ok, "message": "collective check failed: rank 2 (dgx3): x",
                                            "lines": ["rank node"]}
    assert cli.main(["collective", "-i", "inventories/ring4", "--report", str(tmp_path / "v.json")]) == rc
    out = capsys.readouterr().out
    assert ("rank 2 (dgx3)" in out) == (ok is not None)


def test_doctor_collective_asks_for_the_check(calls, tmp_path):
    made, _, _ = calls
    cli.main(["doctor", "-i", "inventories/ring4", "--collective", "--report-dir", str(tmp_path / "r")])
    argv = made[0][1]
    assert argv[argv.index("-e") + 1] == '{"ds41f_collective": true}'
    cli.main(["doctor", "-i", "inventories/ring4", "--report-dir", str(tmp_path / "r")])
    assert "-e" not in made[1][1]
