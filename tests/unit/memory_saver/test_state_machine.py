"""The memory saver's state machine, fed with recorded readings of real hosts.

Every reading below is one of the recordings in tests/fixtures/{dkms,mok,modinfo}: the DGX Spark lifecycle of
dgx-spark-memory-saver (install, load, remove on dgx3), and public transcripts for the states that lifecycle
never passed through (added-only, built-only, another driver loaded, an unenrolled key).
"""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import memory_saver_state as ms
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dkms, kmod, mok, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

K64, K4 = "7.0.0-1019-nvidia-64k", "7.0.0-1019-nvidia"
WANT = {"package": "dgx-spark-memory-saver", "version": "0.2.0", "kernel": K64, "driver": "580.178.04",
        "hold": ["nvidia-kernel-source-580-open"]}


def text(path):
    return (FIXTURES / path).read_text()


def modinfo(case):
    return {f: (text("modinfo/%s/%s" % (case, f)).strip() if (FIXTURES / "modinfo" / case / f).exists() else None)
            for f in kmod.FIELDS}


# The loaded module as /sys/module/nvidia_uvm showed it on dgx3 (lifecycle.json, phases "dkms" and "dkms-removed").
LOADED_PATCHED = {"loaded": True, "srcversion": modinfo("dkms-installed")["srcversion"],
                  "parameters": {ms.PACKING: "Y"}}
LOADED_STOCK = {"loaded": True, "srcversion": modinfo("stock")["srcversion"], "parameters": {}}


def readings(**changes):
    """A Spark on the 64 KiB kernel, stock UVM loaded, nothing registered, Secure Boot on, key enrolled."""
    base = {
        "spark": True, "kernel_installed": True, "running": K64, "page_size": 65536, "driver_disk": "580.178.04",
        "driver_loaded": "580.178.04", "dkms": dkms.parse_status(text("dkms/status-empty.txt")), "source": True,
        "uvm_disk": modinfo("stock"), "uvm_loaded": LOADED_STOCK, "uvm_in_use": False,
        "secure_boot": mok.parse_sb_state(text("mok/sb-state-enabled.txt")),
        "key": mok.parse_test_key(text("mok/test-key-enrolled.txt")), "held": ["nvidia-kernel-source-580-open"],
    }
    base.update(changes)
    return base


def test_not_installed_registers_builds_and_installs():
    result = ms.assess(readings(source=False), WANT)
    assert result["state"] == "not-installed" and not result["ok"]
    assert result["actions"] == ["copy-source", "dkms-add", "dkms-build", "dkms-install", "depmod", "initramfs"]


def test_added_only_registration_continues_with_build():
    want = dict(WANT, package="nvidia", version="615.71.09")
    result = ms.assess(readings(dkms=dkms.parse_status(text("dkms/status-nvidia-added.txt"))), want)
    assert result["state"] == "added"
    assert result["actions"] == ["dkms-build", "dkms-install", "depmod", "initramfs"]


def test_built_registration_continues_with_install():
    first_line = text("dkms/status-jool-built-and-installed.txt").splitlines()[0]
    want = dict(WANT, package="jool", version="4.0.1.git.v4.0.1", kernel="4.15.0-54-generic")
    result = ms.assess(readings(dkms=dkms.parse_status(first_line)), want)
    assert result["state"] == "built" and result["actions"] == ["dkms-install", "depmod", "initramfs"]


def test_another_registered_release_must_be_removed_first():
    want = dict(WANT, package="jool", version="4.0.1.git.v4.0.1", kernel="4.15.0-54-generic")
    result = ms.assess(readings(dkms=dkms.parse_status(text("dkms/status-jool-built-and-installed.txt"))), want)
    assert result["state"] == "other-version" and "4.0.6.git.v4.0.6" in result["blocked"]


def test_installed_while_the_node_still_runs_the_4k_kernel_waits_for_the_boot():
    result = ms.assess(readings(running=K4, dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                                uvm_disk=modinfo("dkms-installed")), WANT)
    assert result["state"] == "installed" and result["ok"] and result["actions"] == []


def test_loaded_means_packing_on_and_loaded_srcversion_equal_to_disk():
    result = ms.assess(readings(dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                                uvm_disk=modinfo("dkms-installed"), uvm_loaded=LOADED_PATCHED), WANT)
    assert result["state"] == "loaded" and result["ok"] and result["actions"] == []
    assert result["notes"] == ["signer: DGX Fleet Secure Boot Module Signature key"]


def test_the_64k_kernel_running_with_other_pages_is_refused():
    result = ms.assess(readings(page_size=4096, dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                                uvm_disk=modinfo("dkms-installed"), uvm_loaded=LOADED_PATCHED), WANT)
    assert result["state"] == "wrong-page-size" and "4096-byte pages" in result["blocked"]


def test_stock_uvm_still_loaded_after_install_is_a_wrong_srcversion_and_is_reloaded():
    installed = dict(dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                     uvm_disk=modinfo("dkms-installed"), uvm_loaded=LOADED_STOCK)
    result = ms.assess(readings(**installed), WANT)
    assert result["state"] == "wrong-srcversion" and result["actions"] == ["reload-uvm"] and not result["reboot"]
    assert "09F2A78862D06017E9324B6" in result["notes"][0] and "34683B82C2D3339BBD2EEC9" in result["notes"][0]
    busy = ms.assess(readings(uvm_in_use=True, **installed), WANT)
    assert busy["actions"] == [] and busy["reboot"]


def test_secure_boot_on_without_an_enrolled_key_stops_before_install():
    result = ms.assess(readings(key=mok.parse_test_key(text("mok/test-key-not-enrolled.txt"))), WANT)
    assert result["state"] == "secure-boot-key-not-enrolled" and "not-enrolled" in result["blocked"]
    pending = ms.assess(readings(key=mok.parse_test_key(text("mok/test-key-pending.txt"))), WANT)
    assert pending["state"] == "secure-boot-key-not-enrolled" and "pending" in pending["blocked"]
    off = ms.assess(readings(secure_boot=mok.parse_sb_state(text("mok/sb-state-disabled.txt")), key="not-enrolled"),
                    WANT)
    assert off["state"] == "not-installed"


def test_a_different_loaded_driver_is_refused(tmp_path):
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(text("modinfo/proc-driver-nvidia-version-470.103.01.txt"))
    loaded = platform.driver_version(Host(str(tmp_path)))
    result = ms.assess(readings(driver_loaded=loaded), WANT)
    assert result["state"] == "driver-mismatch" and "470.103.01" in result["blocked"]
    assert ms.assess(readings(driver_disk="470.63.01"), WANT)["state"] == "driver-mismatch"


def test_a_node_that_is_not_a_spark_is_unavailable_and_says_why():
    result = ms.assess(readings(spark=False, reason="memory saver skipped: not a DGX Spark (a podman container)"),
                       WANT)
    assert result == {"state": "unavailable", "ok": True, "actions": [], "blocked": None, "reboot": False,
                      "notes": ["memory saver skipped: not a DGX Spark (a podman container)"]}


def test_the_nvidia_packages_are_held_while_installed_and_released_after_removal():
    result = ms.assess(readings(held=[]), WANT)
    assert result["actions"][-1] == "hold-packages"
    removed = ms.assess_removal(readings(), WANT)
    assert removed["state"] == "removed" and removed["actions"] == ["unhold-packages"]


def test_removal_of_an_installed_release_then_the_stock_module_is_back():
    installed = ms.assess_removal(readings(dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                                           uvm_disk=modinfo("dkms-installed"), held=[]), WANT)
    assert installed["actions"] == ["dkms-remove", "depmod", "initramfs"]
    done = ms.assess_removal(readings(held=[]), WANT)  # the recorded state after `dkms remove --all`
    assert done["state"] == "removed" and done["ok"]


@pytest.mark.parametrize("loaded, state", [(LOADED_PATCHED, "patched-loaded"), (LOADED_STOCK, "removed")])
def test_after_removal_a_still_loaded_patched_module_is_reloaded(loaded, state):
    assert ms.assess_removal(readings(uvm_loaded=loaded, held=[]), WANT)["state"] == state


def test_a_dkms_file_left_without_registration_means_the_stock_module_was_not_restored():
    result = ms.assess_removal(readings(uvm_disk=modinfo("dkms-installed"), held=[]), WANT)
    assert result["state"] == "stock-not-restored" and result["actions"][0] == "reinstall-stock-uvm"
