"""The scrub's service and timer as the model stage renders them from its own defaults and vars, the span filter
that turns their spans into the program's seconds, and the doctor's --deep switch."""

import os
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.dgxspark.ds41f.plugins.filter.time_span import span_seconds
from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe
from ds41f import cli, runs

ROLE = Path(__file__).resolve().parents[3] / "roles" / "model"


def role_values(**site):
    """The role's defaults and vars, templated as Ansible would (the few filters they use), with ``site`` over them."""
    raw = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
               **yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
    raw.update(site, model_dir="/var/lib/ds41f/models/m/1bae0e10")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update({"dirname": os.path.dirname, "dgxspark.ds41f.span_seconds": span_seconds})
    names = ("model_info_path", "model_scrub_period", "model_scrub_timeout", "_model_scrub_dir",
             "_model_scrub_program", "_model_scrub_config", "_model_scrub_unit", "_model_scrub_period_s",
             "_model_scrub_timeout_s")
    values = {}
    for name in names:  # in dependency order: each refers only to names before it
        values[name] = env.from_string(str(raw[name])).render(**values) if isinstance(raw[name], str) else raw[name]
    return values


def render(name, **site):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLE / "templates")), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    return env.get_template(name).render(ansible_managed="Ansible managed", **role_values(**site))


def settings(text):
    return [line for line in text.splitlines() if line and not line.startswith("#") and not line.startswith("[")]


def test_the_service_runs_the_installed_program_when_due_at_the_lowest_priority_within_its_budget():
    unit = settings(render("ds41f-model-scrub.service.j2"))
    assert "ExecStart=/usr/bin/python3 /usr/local/lib/ds41f/scrub/ds41f-model-scrub.py /etc/ds41f/model-scrub.json " \
           "--due" in unit
    assert "ConditionPathExists=/etc/ds41f/model-scrub.json" in unit
    assert {"Type=oneshot", "TimeoutStartSec=6h", "Nice=19", "CPUSchedulingPolicy=idle",
            "IOSchedulingClass=idle"} <= set(unit)
    assert "Description=ds41f: hash every file of the checkpoint in full when due (every 1w)" in unit


def test_the_timer_looks_hourly_from_its_start_and_names_the_site_s_period():
    timer = settings(render("ds41f-model-scrub.timer.j2", model_scrub_period="3d"))
    assert timer == ["Description=ds41f: look every hour whether the checkpoint scrub is due (every 3d)",
                     "OnActiveSec=1h", "OnUnitActiveSec=1h", "Unit=ds41f-model-scrub.service",
                     "WantedBy=timers.target"]
    assert recipe.SCRUB_LOOK_S == 3600  # the validation's floor for the period is this look


def test_a_budget_in_the_site_reaches_the_unit_and_the_program_in_seconds():
    values = role_values(model_scrub_timeout="1h 30min", model_scrub_period="2w")
    assert "TimeoutStartSec=1h 30min" in settings(render("ds41f-model-scrub.service.j2",
                                                         model_scrub_timeout="1h 30min"))
    assert (values["_model_scrub_timeout_s"], values["_model_scrub_period_s"]) == ("5400", "1209600")


@pytest.mark.parametrize("span, seconds", [("1w", 604800), ("6h", 21600), ("90", 90), ("1h 30min", 5400),
                                           ("500ms", 1), ("2.5h", 9000)])
def test_a_span_in_seconds_as_systemd_reads_it(span, seconds):
    assert span_seconds(span) == seconds


@pytest.mark.parametrize("span", ["", "0", "infinity", "1 fortnight", "-1h"])
def test_what_systemd_would_refuse_or_read_as_no_limit_is_refused_with_the_fix(span):
    with pytest.raises(AnsibleFilterError, match="Fix: write"):
        span_seconds(span)


def test_doctor_deep_asks_for_the_scrub(monkeypatch, tmp_path, capsys):
    made = []
    monkeypatch.setattr(runs, "run_tee", lambda name, argv, env=None: made.append(argv) or runs.Result(
        0, tmp_path, 1.0))
    cli.main(["doctor", "-i", "inventories/ring4", "--deep", "--collective", "--report-dir", str(tmp_path / "r")])
    cli.main(["doctor", "-i", "inventories/ring4", "--report-dir", str(tmp_path / "r")])
    extra = [[argv[i + 1] for i, word in enumerate(argv) if word == "-e"] for argv in made]
    assert extra == [['{"ds41f_collective": true}', '{"ds41f_deep": true}'], []]
    with pytest.raises(SystemExit):
        cli.main(["doctor", "--help"])
    assert "--deep" in capsys.readouterr().out


def test_systemd_itself_accepts_both_units(tmp_path):
    """systemd-analyze verify (it only reads the files) on the units as rendered, the service's interpreter present."""
    import subprocess

    for name in ("ds41f-model-scrub.service", "ds41f-model-scrub.timer"):
        (tmp_path / name).write_text(render(name + ".j2"))
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "ds41f-model-scrub.timer"),
                           str(tmp_path / "ds41f-model-scrub.service")], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
