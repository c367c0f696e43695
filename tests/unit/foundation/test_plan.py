"""converge.Plan, the shape of every converging module: what it declares, and a file's mode and owner kept."""

import grp
import os
import pwd

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


class Module:
    def __init__(self, check_mode):
        self.check_mode = check_mode


def me():
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def test_a_file_with_another_mode_is_one_change_applied_only_outside_check_mode(tmp_path):
    path = tmp_path / "conf"
    path.write_text("x\n")
    os.chmod(path, 0o666)
    owner, group = me()
    for check_mode in (True, False):
        plan = Plan(Module(check_mode))
        plan.file_attributes(str(path), "0644", owner, group)
        assert plan.drift == [{"setting": "%s attributes" % path, "expected": "0644 %s:%s" % (owner, group),
                               "found": "0666 %s:%s" % (owner, group),
                               "fix": None, "action": "chmod 0644 %s; chown %s:%s %s" % (path, owner, group, path),
                               "object": {"kind": "file", "name": str(path)}}]
        assert oct(path.stat().st_mode & 0o777) == ("0o666" if check_mode else "0o644")
    plan = Plan(Module(True))
    plan.file_attributes(str(path), "0644", owner, group)
    assert plan.result()["changed"] is False
    assert plan.result()["managed"] == [{"kind": "file", "name": str(path), "mode": "0644", "owner": owner,
                                         "group": group}]


def test_a_missing_file_is_declared_but_left_to_the_contents_change(tmp_path):
    plan = Plan(Module(True))
    plan.file_attributes(str(tmp_path / "absent"), "0600")
    plan.manages("file", str(tmp_path / "absent"), mode="0600", owner="root", group="root")  # declared once
    assert plan.drift == [] and len(plan.managed) == 1


def test_a_plan_made_with_the_operators_command_gives_it_as_every_rows_fix(tmp_path):
    plan = Plan(Module(True), fix="ds41f run firewall")
    plan.change("inet ds41f rules", "the rules", "missing: a rule", "nft -f /etc/ds41f/firewall.nft",
                about=("nft_table", "inet ds41f"))
    plan.change("x", 1, 2, "do x", fix="ds41f run firewall -e '{\"y\": true}'")
    assert [d["fix"] for d in plan.drift] == ["ds41f run firewall", "ds41f run firewall -e '{\"y\": true}'"]
    assert plan.actions == ["nft -f /etc/ds41f/firewall.nft", "do x"]  # what it would do stays the action
    assert plan.drift[0]["object"] == {"kind": "nft_table", "name": "inet ds41f"}
