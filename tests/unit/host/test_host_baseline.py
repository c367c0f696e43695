"""The host baseline's pieces that run without a node: the sysctl file, the unit policy's decisions over a
recorded `systemctl show`, the NVMe coalescing reading, and the GRUB snippet that drops the splash."""

import subprocess

import pytest

from ansible_collections.dgxspark.ds41f.plugins.modules import spark_tuning, sysctl_file, unit_policy
from tests.conftest import FIXTURES, ROOT

BOOT = FIXTURES / "boot"


def test_the_sysctl_file_holds_exactly_the_settings_in_order():
    text = sysctl_file.render({"kernel.panic": 30, "kernel.panic_on_oops": 1})
    assert text.splitlines()[1:] == ["kernel.panic = 30", "kernel.panic_on_oops = 1"]
    assert sysctl_file.proc_path("vm.watermark_boost_factor") == "/proc/sys/vm/watermark_boost_factor"


def test_only_net_settings_are_namespaced():
    # Anything else written from a privileged lab node would change the host (LAB-NOTES).
    assert sysctl_file.namespaced("net.ipv4.ip_forward")
    assert not sysctl_file.namespaced("kernel.panic") and not sysctl_file.namespaced("vm.min_free_kbytes")


class FakeModule:
    """Enough of AnsibleModule for unit_policy: systemctl answers come from a recorded lab node."""

    def __init__(self, params, show, default="graphical.target"):
        self.params = params
        self.show_text = show
        self.default = default
        self.check_mode = True

    def get_bin_path(self, name, required=False):
        return "/bin/" + name

    def run_command(self, argv):
        if argv[1] == "show":  # the recorded block of each unit asked for, in the order asked
            blocks = {b.split("\n", 1)[0][3:]: b for b in self.show_text.strip().split("\n\n")}
            return 0, "\n\n".join(blocks[u] for u in argv[argv.index("--") + 1:]) + "\n", ""
        if argv[1] == "get-default":
            return 0, self.default + "\n", ""
        raise AssertionError("check mode ran %s" % argv)

    def fail_json(self, **kw):
        raise AssertionError(kw["msg"])


RECORDED = (BOOT / "systemctl-show-lab-node.txt").read_text()
UNITS = ["ssh.service", "gdm3.service", "apt-daily.timer", "lldpd.service", "ds41f-kernel-memory.service"]


def changes_for(params):
    module = FakeModule(dict({"default_target": None, "enable": [], "disable": [], "mask": []}, **params), RECORDED)
    record, absent = {}, []
    changes = unit_policy.policy_changes(module, unit_policy.Systemd(module), record, absent)
    return {c[0]: c[3] for c in changes}, record, absent


def test_recorded_systemctl_show_is_read_unit_by_unit():
    module = FakeModule({}, RECORDED)
    states = unit_policy.Systemd(module).show(UNITS)
    assert states["ssh.service"]["UnitFileState"] == "enabled" and states["gdm3.service"]["LoadState"] == "not-found"
    assert states["ds41f-kernel-memory.service"]["ConditionResult"] == "no"


def test_disabling_skips_missing_units_and_leaves_masked_ones():
    actions, record, absent = changes_for({"default_target": "multi-user.target",
                                           "disable": ["gdm3.service", "apt-daily.timer", "lldpd.service"]})
    assert actions == {"default target": "systemctl set-default multi-user.target",
                       "lldpd.service": "systemctl disable --now lldpd.service"}
    assert absent == ["gdm3.service"]
    # What the revert needs: the target and the unit's state before.
    assert record == {"default_target": "graphical.target",
                      "units": {"lldpd.service": {"file": "enabled", "active": True}}}


def test_a_unit_whose_condition_keeps_it_out_of_a_container_counts_as_started():
    actions, _, _ = changes_for({"enable": ["ds41f-kernel-memory.service", "ssh.service"]})
    assert actions == {}


def test_masking_an_active_unit_stops_it_too():
    actions, record, _ = changes_for({"mask": ["ssh.service", "apt-daily.timer"]})
    assert actions == {"ssh.service": "systemctl mask --now ssh.service"}
    assert record["units"]["ssh.service"] == {"file": "enabled", "active": True}


def test_the_record_of_prior_states_goes_with_the_unit_change_in_the_diff_and_is_no_row_of_its_own(tmp_path):
    """lldpd stopped on a node whose record was never written (nothing was changed there before): the doctor's row
    is the unit; writing its prior state first is part of that fix, not a second cause."""
    record = tmp_path / "units.json"
    module = FakeModule({"default_target": None, "enable": [], "disable": ["lldpd.service"], "mask": [],
                         "record": str(record), "state": "present"}, RECORDED)
    result = {}
    module.exit_json = result.update
    unit_policy.run(module)
    assert [row["setting"] for row in result["drift"]] == ["lldpd.service"]
    assert result["drift"][0]["object"] == {"kind": "unit", "name": "lldpd.service"}  # a far end's cable names it
    assert result["actions"] == ["record prior states in %s" % record, "systemctl disable --now lldpd.service"]
    assert [d["before_header"] for d in result["diff"]] == [str(record), "lldpd.service"]
    assert not record.exists()  # check mode


def test_a_masked_unit_the_policy_enables_is_unmasked_first_and_the_revert_masks_it_again():
    """systemctl enable refuses a masked unit (apt-daily.timer is masked on the recorded node): the change unmasks it,
    its row is about the unit, and the record puts the mask back."""
    actions, record, _ = changes_for({"enable": ["apt-daily.timer"]})
    assert actions == {"apt-daily.timer": "systemctl unmask apt-daily.timer; systemctl enable --now apt-daily.timer"}
    assert record["units"] == {"apt-daily.timer": {"file": "masked", "active": False}}
    enabled = RECORDED.replace("Id=apt-daily.timer\nLoadState=masked\nActiveState=inactive\nUnitFileState=masked",
                               "Id=apt-daily.timer\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled")
    module = FakeModule({}, enabled)
    plan = unit_policy.Plan(module)
    unit_policy.restore(module, plan, unit_policy.Systemd(module), record)
    assert plan.actions == ["systemctl disable apt-daily.timer; systemctl mask --now apt-daily.timer"]
    assert plan.drift[0]["object"] == {"kind": "unit", "name": "apt-daily.timer"}


@pytest.mark.parametrize("name, value", [("nvme-get-feature-8-dgx-os-default.txt", 0x107),
                                         ("nvme-get-feature-8-off.txt", 0)])
def test_nvme_interrupt_coalescing_value(name, value):
    assert spark_tuning.feature_value((BOOT / name).read_text()) == value


def test_the_grub_snippet_drops_splash_and_keeps_every_other_argument(tmp_path):
    # A Spark's recorded command line, minus what GRUB adds itself, as GRUB_CMDLINE_LINUX_DEFAULT.
    args = [a for a in (BOOT / "cmdline-spark-6.17.0-1014-nvidia.txt").read_text().split()
            if not a.startswith(("BOOT_IMAGE=", "root=")) and a != "ro"]
    snippet = (ROOT / "roles/host_baseline/templates/grub-console.cfg.j2").read_text().replace(
        "{{ ansible_managed }}", "test")
    script = tmp_path / "grub"
    script.write_text('GRUB_CMDLINE_LINUX_DEFAULT="%s"\n%s\necho "$GRUB_CMDLINE_LINUX_DEFAULT"\n' % (
        " ".join(args), snippet))
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=True).stdout.split()
    assert out == [a for a in args if a != "splash"] and "quiet" in out
