"""A file nobody declared in a folder the host baseline writes into: generated from the stage itself. Every file
the stage writes (roles/host_baseline/vars/main.yml, its templates rendered from group_vars, its sysctl files)
that a reader merges with others, and every setting in it, gets a foreign file: where it wins with another
value (exactly one row, about that file, and the run turns its line off and nothing else), with the stage's value
or where it cannot win (no row), and as a package's file (the run leaves it alone and writes an edited copy of
the same name in /etc)."""

from __future__ import annotations

import ast

import jinja2
import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import config_layers as layers
from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, foreign_files
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from ansible_collections.dgxspark.ds41f.plugins.modules import sshd_effective, sysctl_file
from tests.conftest import FIXTURES, ROOT
from tests.mutation.doctor_mutations import other_value

ROLE = ROOT / "roles" / "host_baseline"
SSHD_MAIN = (FIXTURES / "config_layers" / "labnode-debian12" / "etc" / "ssh" / "sshd_config").read_text()


def stage_files():
    """(path, content) of every file the host baseline writes into a folder a reader merges, as the role renders
    them (its SSH user: root)."""
    values = yaml.safe_load((ROOT / "group_vars" / "all" / "host_baseline.yml").read_text())
    values.update(yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
    values.update(ansible_managed="Ansible managed", _host_baseline_memlock_users=["root"])
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLE / "templates")), keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)

    def value(text):
        return env.from_string(text).render(**values) if isinstance(text, str) else text

    files = values["_host_baseline_files"] + ast.literal_eval(value(values["_host_baseline_protect_files"]))
    out = [(value(f["path"]), env.get_template(f["template"]).render(**dict(values, **f.get("vars", {}))))
           for f in files if layers.layout_for(value(f["path"]))]
    out += [(values[path], sysctl_file.render(values[settings])) for path, settings in (
        ("_host_baseline_sysctl_recovery", "host_baseline_sysctl_recovery"),
        ("_host_baseline_sysctl_memory", "host_baseline_sysctl_memory"))]
    return out


STAGE = stage_files()
CASES = [(path, content, entry) for path, content in STAGE if layers.layout_for(path)
         for entry in {e.key: e for e in layers.layout_for(path).own(content)}.values()]


def test_the_stage_writes_into_every_merged_folder_the_issue_names():
    folders = {layers.layout_for(p).folder for p, _, _ in CASES}
    assert {"/etc/sysctl.d", "/etc/ssh/sshd_config.d", "/etc/modprobe.d", "/etc/security/limits.d",
            "/etc/systemd/system.conf.d", "/etc/systemd/system/ssh.service.d",
            "/etc/systemd/system/tailscaled.service.d", "/etc/systemd/system/plymouth-quit-wait.service.d",
            "/etc/systemd/system/ds41f-management-health.service.d",
            "/etc/systemd/system/ds41f-management-health.timer.d"} == folders
    assert {"kernel.panic", "vm.watermark_boost_factor", "LoginGraceTime", "nvidia_drm modeset", "root hard memlock",
            "[Service] MemoryMin", "[Manager] RuntimeWatchdogSec"} <= {e.name for _, _, e in CASES}


class Module:
    def __init__(self, check_mode):
        self.check_mode = check_mode


def node(tmp_path):
    """A node's root holding the stage's files and Debian's sshd_config (it includes sshd_config.d)."""
    host = Host(str(tmp_path))
    for path, content in STAGE + [("/etc/ssh/sshd_config", SSHD_MAIN)]:
        write(tmp_path, path, content)
    return host


def write(root, path, text):
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)


def different(value):
    return other_value(value) or value + "x"


def place(layout, wins):
    """A foreign file's name in the stage's folder: where it wins (after the stage's, before it for sshd) or not."""
    first = (layout.order == "first") == wins
    return "%s/%s" % (layout.folder, "00-foreign.conf" if first else "zz-foreign.conf")


def audit(host, path, content, check_mode=True):
    plan = Plan(Module(check_mode))
    found = foreign_files.audit(plan, host, path, content)
    return plan, found


def ids(case):
    return "%s %s" % (case[0].rsplit("/", 2)[-2], case[2].name) if isinstance(case, tuple) else str(case)


@pytest.mark.parametrize("path, content, mine", CASES, ids=[ids(c) for c in CASES])
def test_a_foreign_file_that_wins_is_one_row_about_it_and_the_run_turns_off_its_line(tmp_path, path, content, mine):
    host = node(tmp_path)
    layout = layers.layout_for(path)
    foreign = place(layout, wins=True)
    kept = "# a colleague's file\n" + layers.render(layers.layout_name(layout), mine.name, different(mine.value))
    write(tmp_path, foreign, kept)
    plan, _ = audit(host, path, content)
    (row,) = plan.drift
    assert row["object"] == {"kind": "file", "name": foreign} and "cause" not in row
    assert row["setting"] == layout.label(mine) and row["action"].startswith("turn off line ")
    # No command of its own: the doctor gives the stage's run, which turns the line off.
    (shown,) = drift.rows_from_result("dgx2", "host_baseline", "files", {"drift": plan.drift})
    assert shown["fix"] == "ds41f run host_baseline" and shown["object"] == dict(row["object"], node="dgx2")
    assert row["expected"] == "%s, as %s sets it" % (mine.value, path)
    assert row["found"].startswith("%s, in %s line " % (different(mine.value), foreign))
    assert {"kind": "setting", "name": "%s: %s" % (layout.folder, mine.name), "folder": layout.folder,
            "order": layout.order, "layout": layers.layout_name(layout), "key": mine.name,
            "value": mine.value} in plan.managed
    assert (tmp_path / foreign.lstrip("/")).read_text() == kept  # check mode writes nothing

    audit(host, path, content, check_mode=False)
    after = (tmp_path / foreign.lstrip("/")).read_text()
    assert after.startswith("# a colleague's file\n") and "# turned off by ds41f: %s sets" % path in after
    assert audit(host, path, content)[0].drift == []  # the run's repair is whole: the doctor is clean after it


@pytest.mark.parametrize("path, content, mine", CASES, ids=[ids(c) for c in CASES])
def test_a_foreign_file_with_the_stages_value_or_where_it_cannot_win_is_no_row(tmp_path, path, content, mine):
    host = node(tmp_path)
    layout = layers.layout_for(path)
    name = layers.layout_name(layout)
    write(tmp_path, place(layout, wins=True), layers.render(name, mine.name, mine.value))
    write(tmp_path, place(layout, wins=False), layers.render(name, mine.name, different(mine.value)))
    if isinstance(layout, layers.Unit) and path == "/etc/systemd/system/%s" % layout.unit:
        (tmp_path / place(layout, wins=False).lstrip("/")).unlink()  # every drop-in beats a unit file: none loses
    assert audit(host, path, content)[0].drift == []


VENDOR = [c for c in CASES if not isinstance(layers.layout_for(c[0]), (layers.Sshd, layers.Limits))]


@pytest.mark.parametrize("path, content, mine", VENDOR, ids=[ids(c) for c in VENDOR])
def test_a_packages_file_is_left_alone_and_an_edited_copy_of_the_same_name_goes_to_etc(tmp_path, path, content, mine):
    host = node(tmp_path)
    layout = layers.layout_for(path)
    vendor = "/usr/lib/" + place(layout, wins=True)[len("/etc/"):]
    text = layers.render(layers.layout_name(layout), mine.name, different(mine.value))
    write(tmp_path, vendor, text)
    plan, _ = audit(host, path, content)
    assert [r["object"]["name"] for r in plan.drift] == [vendor]
    assert plan.actions[-1].endswith("(in %s, read instead)" % layers.editable(vendor))
    audit(host, path, content, check_mode=False)
    assert (tmp_path / vendor.lstrip("/")).read_text() == text
    assert "turned off by ds41f" in (tmp_path / layers.editable(vendor).lstrip("/")).read_text()
    assert audit(host, path, content)[0].drift == []


def test_a_running_sysctl_that_a_foreign_file_explains_names_it_as_its_cause(tmp_path):
    """On bare metal the boot applied the foreign file: the running value's row is its echo and folds into it."""
    host = node(tmp_path)
    write(tmp_path, "/etc/sysctl.d/99-local.conf", "kernel.panic = 0\n")
    plan = Plan(Module(True))
    found = foreign_files.audit(plan, host, "/etc/sysctl.d/95-ds41f-recovery.conf", "kernel.panic = 30\n")
    write(tmp_path, "/proc/sys/kernel/panic", "0\n")
    sysctl_file.live_values(None, plan, host, {"kernel.panic": 30}, False, [],
                            {mine.name: real for mine, _, real in found})
    file_row, running = plan.drift
    assert running["object"] == {"kind": "sysctl", "name": "kernel.panic"}
    assert running["cause"] == file_row["object"] == {"kind": "file", "name": "/etc/sysctl.d/99-local.conf"}


@pytest.mark.parametrize("files, cause, found", [
    ({"/etc/ssh/sshd_config.d/00-site.conf": "LoginGraceTime 120\n"}, "/etc/ssh/sshd_config.d/00-site.conf",
     "120 (sshd -T), from /etc/ssh/sshd_config.d/00-site.conf line 1"),
    ({}, "/etc/ssh/sshd_config.d/01-ds41f-recovery.conf", "120 (sshd -T): no file sets it"),
    ({"/etc/ssh/sshd_config": "LoginGraceTime 120\n"}, "/etc/ssh/sshd_config",
     "120 (sshd -T), from /etc/ssh/sshd_config line 1"),
])
def test_sshd_t_rows_name_the_file_that_decides_as_their_cause(tmp_path, files, cause, found):
    write(tmp_path, "/etc/ssh/sshd_config", SSHD_MAIN)
    for path, text in files.items():
        write(tmp_path, path, text)
    row = sshd_effective.entry(Host(str(tmp_path)), "LoginGraceTime", "30", "120",
                               "/etc/ssh/sshd_config.d/01-ds41f-recovery.conf")
    assert row["cause"] == {"kind": "file", "name": cause} and row["found"] == found
    assert row["object"] == {"kind": "sshd", "name": "LoginGraceTime"}


def test_sshd_t_says_so_when_sshd_does_not_read_the_stages_drop_in(tmp_path):
    write(tmp_path, "/etc/ssh/sshd_config", "PermitRootLogin prohibit-password\n")
    write(tmp_path, "/etc/ssh/sshd_config.d/01-ds41f-recovery.conf", "LoginGraceTime 30\n")
    row = sshd_effective.entry(Host(str(tmp_path)), "LoginGraceTime", "30", "120",
                               "/etc/ssh/sshd_config.d/01-ds41f-recovery.conf")
    assert "cause" not in row and "does not read /etc/ssh/sshd_config.d/01-ds41f-recovery.conf" in row["found"]
    assert row["fix"].startswith("add 'Include /etc/ssh/sshd_config.d/*.conf' as the first line")


def test_sshd_t_is_read_from_a_real_nodes_output():
    wanted = {"LoginGraceTime": 30, "MaxStartups": "64:30:128", "PerSourceMaxStartups": 32}  # host_baseline_sshd
    good = (FIXTURES / "doctor" / "sshd" / "sshd-T-baseline.txt").read_text()
    assert sshd_effective.differing(good, wanted) == []
    bad = (FIXTURES / "doctor" / "sshd" / "sshd-T-earlier-dropin.txt").read_text()
    assert sshd_effective.differing(bad, wanted) == [("LoginGraceTime", "30", "120")]
