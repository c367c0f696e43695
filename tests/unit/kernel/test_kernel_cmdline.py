"""kho=off on the kernel command line, the kernel stage's way: the running command line read against the recipe's
parameters (tests/fixtures/boot), the GRUB drop-in that adds them as grub-mkconfig sources it (a real /bin/sh), the
boot decision and health gate that follow, and grub_boot over a recorded Spark: its rows, the reboot fix, and the
check it lists as not made off a Spark."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import boot
from ansible_collections.dgxspark.ds41f.plugins.modules import grub_boot
from tests.unit.recorded_spark import BOOT, GB10, GPU_QUERY, NO_GPU, FakeModule, host, outcome, text

STOCK, TARGET = "7.0.0-1019-nvidia", "7.0.0-1019-nvidia-64k"
KHO = ["kho=off"]
WITH_KHO = text("proc-cmdline-spark-7.0-64k-kho.constructed.txt", BOOT)
WITHOUT_KHO = text("proc-cmdline-spark-7.0-64k-no-kho.constructed.txt", BOOT)
ENTRIES = boot.parse_grub_cfg(text("grub-spark-two-kernels.constructed.cfg", BOOT))
TARGET_PATH = boot.entry_path(ENTRIES, TARGET)


@pytest.mark.parametrize("line, missing", [
    (text("proc-cmdline-spark-aerial-6.17.0-1014-nvidia.txt", BOOT), KHO),   # recorded on a Spark: no kho
    (text("cmdline-spark-6.17.0-1014-nvidia.txt", BOOT), KHO),
    (WITHOUT_KHO, KHO),
    (WITH_KHO, []),
    (WITH_KHO.strip() + " kho=on", KHO),   # the kernel takes the last value
    ("kho=on " + WITH_KHO, []),
])
def test_the_running_command_line_is_read_for_each_parameter(line, missing):
    assert boot.missing_params(line, KHO) == missing


def grub_mkconfig(tmp_path, before):
    """GRUB_CMDLINE_LINUX(_DEFAULT) after grub-mkconfig has sourced /etc/default/grub (``before``) and the drop-in."""
    script = tmp_path / "mkconfig"
    script.write_text("%s\n%s\necho \"$GRUB_CMDLINE_LINUX|$GRUB_CMDLINE_LINUX_DEFAULT\"\n" % (
        before, kernel_plan.cmdline_text(KHO)))
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=True).stdout.strip()
    linux, default = out.split("|")
    return linux.split(), default.split()


def test_the_drop_in_adds_kho_off_to_a_spark_command_line(tmp_path):
    # A Spark's recorded parameters, minus what GRUB writes itself, as /etc/default/grub holds them.
    args = [a for a in text("cmdline-spark-6.17.0-1014-nvidia.txt", BOOT).split()
            if not a.startswith(("BOOT_IMAGE=", "root=")) and a != "ro"]
    linux, default = grub_mkconfig(tmp_path, 'GRUB_CMDLINE_LINUX=""\nGRUB_CMDLINE_LINUX_DEFAULT="%s"' % " ".join(args))
    assert default == args + KHO and linux == []


@pytest.mark.parametrize("before", [
    'GRUB_CMDLINE_LINUX="kho=off"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"',   # a file before it set it already
    'GRUB_CMDLINE_LINUX_DEFAULT="quiet kho=off"',
])
def test_the_drop_in_never_adds_a_parameter_twice(tmp_path, before):
    linux, default = grub_mkconfig(tmp_path, before)
    assert (linux + default).count("kho=off") == 1


def test_an_earlier_kho_on_is_overridden_by_the_drop_in(tmp_path):
    _, default = grub_mkconfig(tmp_path, 'GRUB_CMDLINE_LINUX_DEFAULT="kho=on quiet"')
    assert boot.missing_params(" ".join(default), KHO) == []


@pytest.mark.parametrize("action, missing, after", [
    ("none", KHO, "reboot"), ("make-default", KHO, "reboot"), ("trial", KHO, "trial"), ("reboot", KHO, "reboot"),
    ("none", [], "none"), ("make-default", [], "make-default"),
])
def test_a_node_that_booted_without_the_parameters_needs_a_boot(action, missing, after):
    decided = {"action": action, "pin": TARGET_PATH, "entry": TARGET_PATH}
    assert kernel_plan.with_cmdline(decided, missing) == dict(decided, action=after)


def test_the_gate_judges_the_command_line_and_leaves_it_unchecked_in_a_container():
    expect = {"kernel": TARGET, "cmdline": KHO, "boot": "old"}
    seen = {"kernel": TARGET, "boot": "new", "systemd": "running"}
    assert kernel_plan.gate(expect, dict(seen, cmdline=WITH_KHO), container=False)["ok"]
    bad = kernel_plan.gate(expect, dict(seen, cmdline=WITHOUT_KHO), container=False)
    assert bad["failures"] == ["the kernel command line lacks kho=off"]
    lab = kernel_plan.gate(expect, dict(seen, cmdline=WITHOUT_KHO), container=True)
    assert lab["ok"] and "command line (a container runs the host's kernel)" in lab["unchecked"]


# -- grub_boot over a recorded Spark, in check mode -------------------------------------------------------------------

def spark(tmp_path, cmdline, dropin=None, running=TARGET, pinned=True, gpu=GB10):
    root = tmp_path / "root"
    for path, content in (("boot/grub/grub.cfg", text("grub-spark-two-kernels.constructed.cfg", BOOT)),
                          ("proc/sys/kernel/osrelease", running + "\n"), ("proc/cmdline", cmdline),
                          (kernel_plan.PIN_FILE, kernel_plan.pin_text(TARGET_PATH) if pinned else None),
                          (kernel_plan.CMDLINE_FILE, dropin)):
        if content is not None:
            (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (root / path.lstrip("/")).write_text(content)
    return host(root, {GPU_QUERY: gpu})


def decide(node, tmp_path, monkeypatch, **params):
    module = FakeModule(dict({"want": TARGET, "stock": STOCK, "record": str(tmp_path / "boot.json"), "arm": False,
                              "cancel_once": False, "backup_dir": str(tmp_path / "before"), "cmdline": KHO,
                              "pin": True}, **params))
    return outcome(grub_boot, module, node, monkeypatch)


def table(result):
    return drift.dedupe(drift.rows_from_result("dgx1", "kernel", "Does the node need a boot?", result))


def test_kho_missing_everywhere_is_one_row_the_drop_in_and_the_boot_follows(tmp_path, monkeypatch):
    result = decide(spark(tmp_path, WITHOUT_KHO), tmp_path, monkeypatch)
    assert result["action"] == "reboot" and result["boots"] == TARGET
    (row,) = table(result)  # the command line's row is the drop-in's consequence
    assert row["object"] == {"node": "dgx1", "kind": "file", "name": kernel_plan.CMDLINE_FILE}
    assert row["fix"] == "ds41f run kernel" and row["found"] == "(absent)"
    assert result["findings"][0]["cause"] == {"kind": "file", "name": kernel_plan.CMDLINE_FILE}
    assert {"kind": "file", "name": kernel_plan.CMDLINE_FILE} in result["managed"]


def test_a_drop_in_in_place_and_no_reboot_yet_is_the_reboot_row(tmp_path, monkeypatch):
    node = spark(tmp_path, WITHOUT_KHO, dropin=kernel_plan.cmdline_text(KHO))
    result = decide(node, tmp_path, monkeypatch)
    (row,) = table(result)
    assert (row["setting"], row["severity"]) == ("kernel command line kho=off", "error")
    assert row["object"] == {"node": "dgx1", "kind": "cmdline", "name": "kho=off"}
    assert row["fix"] == "ds41f run kernel -e '{\"kernel_reboot_ok\": true}'"
    assert result["action"] == "reboot" and result["changed"] is False


def test_kho_on_the_command_line_and_the_drop_in_in_place_is_nothing_to_do(tmp_path, monkeypatch):
    result = decide(spark(tmp_path, WITH_KHO, dropin=kernel_plan.cmdline_text(KHO)), tmp_path, monkeypatch)
    assert result["action"] == "none" and table(result) == [] and result["changed"] is False


def test_a_4k_shape_keeps_its_kernel_and_its_pin_and_reboots_only_for_kho(tmp_path, monkeypatch):
    node = spark(tmp_path, WITHOUT_KHO, dropin=kernel_plan.cmdline_text(KHO), running=STOCK, pinned=False)
    result = decide(node, tmp_path, monkeypatch, want=STOCK, pin=False)
    assert (result["action"], result["pin"], result["boots"]) == ("reboot", None, STOCK)
    assert kernel_plan.PIN_FILE not in result["actions"] and [r["setting"] for r in table(result)] == [
        "kernel command line kho=off"]


def test_an_empty_list_removes_the_drop_in_and_unset_leaves_it(tmp_path, monkeypatch):
    node = spark(tmp_path, WITH_KHO, dropin=kernel_plan.cmdline_text(KHO))
    removed = decide(node, tmp_path, monkeypatch, cmdline=[])
    assert removed["actions"] == ["copy the bootloader files to %s" % (tmp_path / "before"),
                                  "remove %s, then update-grub" % kernel_plan.CMDLINE_FILE]
    assert decide(node, tmp_path, monkeypatch, cmdline=None)["actions"] == []


@pytest.mark.parametrize("bad", ["kho=off; reboot", "kho off", '"kho=off"', ""])
def test_a_parameter_the_drop_in_cannot_carry_is_refused(tmp_path, monkeypatch, bad):
    result = decide(spark(tmp_path, WITH_KHO), tmp_path, monkeypatch, cmdline=[bad])
    assert result["failed"] and result["msg"].startswith("cmdline: %r is not a kernel parameter" % bad)


@pytest.mark.parametrize("marker, reason", [(None, "not a DGX Spark (no GB10 found)"),
                                            ("run/.containerenv", "not a DGX Spark (a podman container)")])
def test_off_a_spark_kho_is_listed_as_not_checked(tmp_path, monkeypatch, marker, reason):
    node = spark(tmp_path, WITHOUT_KHO, gpu=NO_GPU)
    if marker:
        (tmp_path / "root" / marker).parent.mkdir(parents=True)
        (tmp_path / "root" / marker).write_text("")
    result = decide(node, tmp_path, monkeypatch)
    assert result["findings"] == [] and kernel_plan.CMDLINE_FILE not in " ".join(result["actions"])
    assert {"node": "dgx1", "check": "kho=off on the kernel command line", "reason": reason} in drift.not_checked(
        "dgx1", "Does the node need a boot?", result)
