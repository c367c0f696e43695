"""`dkms status`, `mokutil` and modinfo readers against recorded outputs (tests/fixtures/{dkms,mok,modinfo})."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dkms, kmod, mok
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

DKMS = FIXTURES / "dkms"
MOK = FIXTURES / "mok"
MODINFO = FIXTURES / "modinfo"
PKG, VER, K64 = "dgx-spark-memory-saver", "0.2.0", "7.0.0-1019-nvidia-64k"


def status(name):
    return dkms.parse_status((DKMS / name).read_text())


def test_the_memory_saver_install_on_a_spark_reads_installed_for_the_64k_kernel():
    rows = status("status-memory-saver-installed.txt")
    assert rows == [{"module": PKG, "version": VER, "kernel": K64, "arch": "aarch64", "state": "installed",
                     "note": "(Original modules exist)"}]
    assert dkms.registration(rows, PKG, VER, K64) == "installed"
    assert dkms.registration(rows, PKG, VER, "7.0.0-1019-nvidia") == "added"  # registered, not for that kernel
    # The same line inside DKMS's full install transcript is found among the other output lines.
    assert dkms.registration(dkms.parse_status((DKMS / "memory-saver-install.log").read_text()), PKG, VER,
                             K64) == "installed"


def test_after_removal_nothing_is_registered():
    assert dkms.registration(status("status-empty.txt"), PKG, VER, K64) is None


def test_an_added_only_registration_has_no_kernel():
    assert status("status-nvidia-added.txt") == [{"module": "nvidia", "version": "615.71.09", "kernel": None,
                                                  "arch": None, "state": "added", "note": None}]


def test_dkms2_comma_format_built_and_installed_versions():
    rows = status("status-jool-built-and-installed.txt")
    assert [(r["version"], r["state"]) for r in rows] == [("4.0.1.git.v4.0.1", "built"),
                                                         ("4.0.6.git.v4.0.6", "installed")]
    assert dkms.other_versions(rows, "jool", "4.0.6.git.v4.0.6") == ["4.0.1.git.v4.0.1"]
    assert status("status-amdgpu-dkms2.txt")[0]["kernel"] == "4.15.0-46-generic"


def test_warnings_after_the_state_stay_in_the_note():
    row = status("status-nvidia-installed-warning.txt")[0]
    assert row["state"] == "installed" and row["note"].startswith("(WARNING! Diff between built")


@pytest.mark.parametrize("name, value", [("sb-state-enabled.txt", True), ("sb-state-disabled.txt", False)])
def test_secure_boot_state(name, value):
    assert mok.parse_sb_state((MOK / name).read_text()) is value


def test_no_efi_means_unknown_secure_boot():
    assert mok.parse_sb_state("EFI variables are not supported on this system\n") is None


@pytest.mark.parametrize("name, value", [("test-key-enrolled.txt", "enrolled"),
                                         ("test-key-not-enrolled.txt", "not-enrolled"),
                                         ("test-key-pending.txt", "pending")])
def test_mok_test_key_is_read_from_its_text(name, value):
    assert mok.parse_test_key((MOK / name).read_text()) == value


def test_framework_conf_signing_settings():
    assert mok.parse_framework_conf((MOK / "framework.conf").read_text()) == {
        "mok_signing_key": "/root/.local/share/dgx-spark-memory-saver/keys/MOK.priv",
        "mok_certificate": "/root/.local/share/dgx-spark-memory-saver/keys/MOK.der"}


def modinfo_runner(case):
    """`modinfo -k K -F FIELD nvidia_uvm` answered from tests/fixtures/modinfo/<case>/<field>."""
    def run(argv):
        assert argv[:2] == ["modinfo", "-k"] and argv[3] == "-F" and argv[5] == "nvidia_uvm"
        path = MODINFO / case / argv[4]
        return (0, path.read_text(), "") if path.exists() else (1, "", "")
    return run


def test_modinfo_of_the_dkms_module_on_a_spark():
    disk = kmod.on_disk(Host("/nonexistent", modinfo_runner("dkms-installed")), K64, "nvidia_uvm")
    assert disk["srcversion"] == "34683B82C2D3339BBD2EEC9"
    assert disk["signer"] == "DGX Fleet Secure Boot Module Signature key"
    assert kmod.owner(disk["filename"]) == "dkms"
    stock = kmod.on_disk(Host("/nonexistent", modinfo_runner("stock")), K64, "nvidia_uvm")
    assert kmod.owner(stock["filename"]) == "package" and stock["vermagic"] is None
