"""The kernel stage's decisions: which entry to pin, when to trial, what a gate says, what to roll back."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot
from tests.conftest import FIXTURES

STOCK, TARGET = "7.0.0-1019-nvidia", "7.0.0-1019-nvidia-64k"
ENTRIES = boot.parse_grub_cfg((FIXTURES / "boot" / "grub-spark-two-kernels.constructed.cfg").read_text())
STOCK_PATH = boot.entry_path(ENTRIES, STOCK)
TARGET_PATH = boot.entry_path(ENTRIES, TARGET)
ARMED = boot.parse_grubenv((FIXTURES / "boot" / "grubenv-next-entry").read_text())["next_entry"]


def grub(default, next_entry=None, entries=ENTRIES):
    return {"entries": entries, "default": default, "next_entry": next_entry}


def test_the_pin_names_the_stock_entry_by_its_submenu_path():
    path = kernel_plan.entry_for(ENTRIES, STOCK, "the stock")
    assert kernel_plan.pin_text(path).endswith('GRUB_DEFAULT="%s"\n' % STOCK_PATH)
    assert boot.parse_grub_default(kernel_plan.pin_text(path)) == STOCK_PATH


def test_a_kernel_missing_from_the_menu_is_refused_with_the_entries_found():
    entries = boot.parse_grub_cfg((FIXTURES / "boot" / "grub-ubuntu2404-one-kernel.cfg").read_text())
    with pytest.raises(kernel_plan.PlanError, match=r"7.0.0-1019-nvidia-64k has no entry.*6.8.0-88-generic"):
        kernel_plan.entry_for(entries, TARGET, "the target")


def test_before_the_64k_packages_are_installed_the_stock_entry_is_pinned_and_no_trial_entry_exists():
    only_stock = [e for e in ENTRIES if e["release"] != TARGET]
    plan = kernel_plan.boot_plan(TARGET, STOCK, STOCK, grub(None, entries=only_stock))
    assert plan == {"action": "trial", "pin": STOCK_PATH, "entry": None}


def test_a_node_on_the_stock_kernel_gets_a_one_time_trial_of_the_target_with_stock_pinned():
    plan = kernel_plan.boot_plan(TARGET, STOCK, STOCK, grub(STOCK_PATH))
    assert plan == {"action": "trial", "pin": STOCK_PATH, "entry": TARGET_PATH}


def test_a_trial_armed_by_this_stage_is_the_same_trial():
    # grub-reboot ran but the reboot did not: the pending next_entry is ours.
    assert ARMED == TARGET_PATH
    assert kernel_plan.boot_plan(TARGET, STOCK, STOCK, grub(STOCK_PATH, ARMED))["action"] == "trial"


def test_a_one_time_entry_armed_by_someone_else_stops_the_plan():
    with pytest.raises(kernel_plan.PlanError, match="next_entry"):
        kernel_plan.boot_plan(TARGET, STOCK, STOCK, grub(STOCK_PATH, "gnulinux-advanced-x>something-else"))


def test_after_a_passed_trial_the_target_becomes_the_default_without_another_boot():
    assert kernel_plan.boot_plan(TARGET, STOCK, TARGET, grub(STOCK_PATH)) == {
        "action": "make-default", "pin": TARGET_PATH, "entry": TARGET_PATH}
    assert kernel_plan.boot_plan(TARGET, STOCK, TARGET, grub(TARGET_PATH))["action"] == "none"


def test_revert_pins_stock_and_reboots_without_a_trial():
    assert kernel_plan.boot_plan(STOCK, STOCK, TARGET, grub(TARGET_PATH)) == {
        "action": "reboot", "pin": STOCK_PATH, "entry": STOCK_PATH}
    assert kernel_plan.boot_plan(STOCK, STOCK, STOCK, grub(STOCK_PATH))["action"] == "none"


def test_a_node_that_came_back_wrong_is_returned_to_the_stock_pin():
    # The trial booted the target, the gate failed: rolling back wants the stock kernel again.
    plan = kernel_plan.boot_plan(STOCK, STOCK, TARGET, grub(STOCK_PATH, None))
    assert plan["pin"] == STOCK_PATH and plan["action"] == "reboot"


def test_a_lab_node_has_no_bootloader_and_counts_its_recorded_kernel():
    assert kernel_plan.lab_running(None, STOCK) == STOCK
    running = kernel_plan.lab_running({"kernel": TARGET}, STOCK)
    assert kernel_plan.boot_plan(TARGET, STOCK, running, None)["action"] == "none"
    assert kernel_plan.boot_plan(TARGET, STOCK, STOCK, None)["action"] == "trial"
    assert kernel_plan.boot_plan(STOCK, STOCK, TARGET, None)["action"] == "reboot"


EXPECT = {"kernel": TARGET, "page_size": 65536, "driver": "580.178.04", "boot": "before/1"}
GOOD = {"kernel": TARGET, "page_size": 65536, "driver": "580.178.04", "boot": "after/2", "systemd": "running",
        "marker": None}


def test_gate_passes_a_good_boot_of_the_target():
    verdict = kernel_plan.gate(EXPECT, GOOD, container=False)
    assert verdict == {"ok": True, "failures": [], "unchecked": []}


@pytest.mark.parametrize("change, words", [
    ({"kernel": STOCK}, "kernel is 7.0.0-1019-nvidia, expected 7.0.0-1019-nvidia-64k"),
    ({"page_size": 4096}, "page size is 4096, expected 65536"),
    ({"driver": None}, "driver is None, expected 580.178.04"),
    ({"boot": "before/1"}, "no new boot"),
    ({"systemd": "starting"}, "systemd is 'starting'"),
])
def test_gate_fails_a_node_that_came_back_wrong_and_says_how(change, words):
    verdict = kernel_plan.gate(EXPECT, dict(GOOD, **change), container=False)
    assert not verdict["ok"] and any(words in f for f in verdict["failures"])


def test_in_a_container_the_gate_lists_what_it_could_not_check_and_still_honours_the_lab_marker():
    host_kernel = dict(GOOD, kernel="6.1.0-41-amd64", page_size=4096, driver=None)
    verdict = kernel_plan.gate(EXPECT, host_kernel, container=True)
    assert verdict["ok"] and len(verdict["unchecked"]) == 3
    marked = kernel_plan.gate(EXPECT, dict(host_kernel, marker="/opt/ds41f-lab/x/dgx2.come-back-wrong"),
                              container=True)
    assert not marked["ok"] and "made to come back wrong" in marked["failures"][0]


def test_apt_simulation_of_an_install_lists_what_it_would_install():
    rec = (FIXTURES / "boot" / "apt-simulate-install.txt").read_text()
    result = kernel_plan.parse_apt_simulate(0, rec)
    assert result["error"] is None and result["removals"] == []
    assert ["linux-image-6.1.0-57-cloud-amd64", "6.1.192-3"] in result["installs"]


def test_apt_simulation_that_needs_removals_is_refused():
    refused = kernel_plan.parse_apt_simulate(100, (FIXTURES / "boot" / "apt-simulate-removal-refused.txt").read_text())
    assert refused["error"] == "Packages need to be removed but remove is disabled."
    listed = kernel_plan.parse_apt_simulate(0, (FIXTURES / "boot" / "apt-simulate-removal-listed.txt").read_text())
    assert "systemd-sysv" in listed["removals"] and "libpam-systemd" in listed["removals"]


def test_apt_simulation_with_nothing_to_do_and_with_an_unknown_package():
    nothing = kernel_plan.parse_apt_simulate(0, (FIXTURES / "boot" / "apt-simulate-nothing-to-do.txt").read_text())
    assert nothing == {"installs": [], "removals": [], "error": None}
    missing = kernel_plan.parse_apt_simulate(100, (FIXTURES / "boot" / "apt-simulate-missing-package.txt").read_text())
    assert missing["error"] == "Unable to locate package no-such-package-ds41f"
