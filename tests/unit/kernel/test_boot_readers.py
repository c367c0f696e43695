"""GRUB, grubenv, GRUB_DEFAULT and /proc/cmdline readers against recorded files (tests/fixtures/boot)."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot
from tests.conftest import FIXTURES

BOOT = FIXTURES / "boot"
SPARK_UUID = "7ca20240-3f1d-4c4a-888b-efdb1e5e2023"


def test_real_ubuntu_grub_cfg_yields_the_submenu_path_of_its_kernel():
    entries = boot.parse_grub_cfg((BOOT / "grub-ubuntu2404-one-kernel.cfg").read_text())
    assert [e["id"] for e in entries] == [
        "gnulinux-simple-bae9d9ac-cfb9-4e94-a5e5-faa77306bffb",
        "gnulinux-6.8.0-88-generic-advanced-bae9d9ac-cfb9-4e94-a5e5-faa77306bffb",
        "gnulinux-6.8.0-88-generic-recovery-bae9d9ac-cfb9-4e94-a5e5-faa77306bffb",
        "uefi-firmware",
    ]
    # The functions and if-blocks of 00_header/10_linux must not swallow the submenu's closing brace.
    assert entries[-1]["path"] == "uefi-firmware"
    assert boot.entry_path(entries, "6.8.0-88-generic") == (
        "gnulinux-advanced-bae9d9ac-cfb9-4e94-a5e5-faa77306bffb>"
        "gnulinux-6.8.0-88-generic-advanced-bae9d9ac-cfb9-4e94-a5e5-faa77306bffb")
    assert boot.entry_path(entries, "7.0.0-1019-nvidia-64k") is None


def test_grep_output_of_two_kernels_picks_the_plain_entry_not_upstart_or_recovery():
    entries = boot.parse_grub_cfg((BOOT / "grep-menuentry-two-kernels.txt").read_text())
    plain = [e["release"] for e in entries if e["plain"]]
    assert plain == ["4.15.0-112-generic", "4.4.0-119-generic"]
    assert boot.entry_path(entries, "4.4.0-119-generic") == (
        "gnulinux-advanced-ab51f4e0-07f5-450b-badb-2073d774beb4>"
        "gnulinux-4.4.0-119-generic-advanced-ab51f4e0-07f5-450b-badb-2073d774beb4")


def test_spark_menu_tells_the_4k_and_64k_entries_apart():
    entries = boot.parse_grub_cfg((BOOT / "grub-spark-two-kernels.constructed.cfg").read_text())
    stock = boot.entry_path(entries, "7.0.0-1019-nvidia")
    big = boot.entry_path(entries, "7.0.0-1019-nvidia-64k")
    assert stock == "gnulinux-advanced-%s>gnulinux-7.0.0-1019-nvidia-advanced-%s" % (SPARK_UUID, SPARK_UUID)
    assert big == "gnulinux-advanced-%s>gnulinux-7.0.0-1019-nvidia-64k-advanced-%s" % (SPARK_UUID, SPARK_UUID)


def test_grubenv_written_by_grub_editenv_holds_the_one_time_entry():
    raw = (BOOT / "grubenv-next-entry").read_text()
    assert len(raw) == 1024  # GRUB's fixed-size block, '#'-padded
    env = boot.parse_grubenv(raw)
    assert env == boot.parse_grubenv((BOOT / "grub-editenv-list-next-entry.txt").read_text())
    assert env["next_entry"].endswith(">gnulinux-7.0.0-1019-nvidia-64k-advanced-%s" % SPARK_UUID)
    assert boot.parse_grubenv((BOOT / "grubenv-saved-entry.txt").read_text()) == {"saved_entry": "0"}


def test_grub_default_pin_is_read_without_its_quotes():
    value = boot.parse_grub_default((BOOT / "grub-default-pin-spark.txt").read_text())
    assert value.startswith("gnulinux-advanced-27173d25-") and ">gnulinux-6.17.0-1008-nvidia-advanced-" in value
    assert boot.parse_grub_default("GRUB_DEFAULT=0\n# GRUB_DEFAULT=1\nGRUB_DEFAULT=saved\n") == "saved"
    assert boot.parse_grub_default("GRUB_TIMEOUT=5\n") is None


def test_spark_command_line_names_its_kernel_and_splash():
    cmdline = boot.parse_cmdline((BOOT / "cmdline-spark-6.17.0-1014-nvidia.txt").read_text())
    assert cmdline["release"] == "6.17.0-1014-nvidia"
    assert "splash" in cmdline["params"] and "quiet" in cmdline["params"]
    assert boot.parse_cmdline("")["release"] is None


def test_recorded_spark_proc_cmdline_with_boot_image_names_its_kernel():
    # `cat /proc/cmdline` on a DGX Spark (public Aerial setup note, SOURCE.md): BOOT_IMAGE= comes first.
    cmdline = boot.parse_cmdline((BOOT / "proc-cmdline-spark-aerial-6.17.0-1014-nvidia.txt").read_text())
    assert cmdline["image"] == "/boot/vmlinuz-6.17.0-1014-nvidia"
    assert cmdline["release"] == "6.17.0-1014-nvidia"
    assert "earlycon=uart,mmio32,0x16A00000" in cmdline["params"]  # the GB10 UART the seeds' boot line shows
    assert "initcall_blacklist=tegra234_cbb_init" in cmdline["params"]
    assert not any(p.startswith("BOOT_IMAGE=") for p in cmdline["params"])


def test_boot_token_changes_with_pid1_start_time(tmp_path):
    from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host

    (tmp_path / "proc/sys/kernel/random").mkdir(parents=True)
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/random/boot_id").write_text("c0c3546b-5bc0-470d-82ea-fdb098e65a12\n")
    stat = "1 (systemd) S 0 1 1 0 -1 4194560 %s 0 0 0 0 0 0 0 20 0 1 0 %d 0 0"
    (tmp_path / "proc/1/stat").write_text(stat % ("x", 4242))
    first = boot.boot_token(Host(str(tmp_path)))
    (tmp_path / "proc/1/stat").write_text(stat % ("x", 9999))
    second = boot.boot_token(Host(str(tmp_path)))
    assert first.startswith("c0c3546b-5bc0-470d-82ea-fdb098e65a12/") and first.endswith("/4242")
    assert first != second
