"""The host baseline's DGX Spark checks against recorded outputs (tests/fixtures/spark-host/SOURCE.md): the UEFI boot
order (efibootmgr), the fan floor's layers, the DRM card and its master, the DGX OS release; then the spark_host
module over a recorded Spark, good and bad, and on a node that is not a Spark."""

from __future__ import annotations

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dgx_os, dpkg, drm, efi, fan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable
from ansible_collections.dgxspark.ds41f.plugins.modules import spark_host
from tests.unit.recorded_spark import BOOT, GB10, GPU_QUERY, NO_GPU, SPARK, FakeModule, host, outcome, text, tree

EFI = ("efibootmgr", "-v")


def units():
    """The recorded `systemctl show` blocks of a lab node, by unit: the forms a unit's state takes."""
    blocks = text("systemctl-show-lab-node.txt", BOOT).strip().split("\n\n")
    return {b.split("\n", 1)[0][3:]: b + "\n" for b in blocks}


SHOW = ("systemctl", "show", "--property=LoadState,UnitFileState,ActiveState", "--", fan.UNIT)
MODINFO = ("modinfo", "-k", "7.0.0-1019-nvidia", "-F", "filename", fan.MODULE)
META = ("dpkg-query", "-W", "-f", dpkg.FORMAT, dgx_os.META_PACKAGE)
RUNNING, ENABLED_NOT_RUNNING = (units()[u] for u in ("lldpd.service", "ds41f-kernel-memory.service"))
NOT_FOUND = text("systemctl-show-fan-unit-not-found.txt")


# -- UEFI boot order ------------------------------------------------------------------------------------------------

def test_a_spark_whose_os_boots_first_keeps_its_order():
    boot = efi.parse(text("efibootmgr-v-dgx1-os-first.txt"))
    assert boot["current"] == "0001" and boot["order"] == ["0001", "0003", "0004", "0005", "0006"]
    assert boot["entries"]["0003"]["label"] == "UEFI: PXE IPv4 Realtek PCIe 10 GBE Family Controller"
    assert [n for n, e in sorted(boot["entries"].items()) if efi.is_network(e)] == ["0003"]
    assert efi.os_entry(boot) == "0001" and efi.wanted_order(boot) == boot["order"]


def test_pxe_first_after_a_firmware_update_moves_the_os_entry_to_the_front():
    boot = efi.parse(text("efibootmgr-v-dgx3-pxe-first.txt"))
    assert efi.os_entry(boot) == "0004"
    assert efi.wanted_order(boot) == ["0004", "0002"]
    assert efi.describe(boot, ["0004"]) == "0004 (ubuntu)"


def test_network_entries_are_known_by_their_label_where_no_path_is_printed():
    boot = efi.parse(text("efibootmgr-ubuntu-first-network-labels.txt"))
    assert [n for n in boot["order"] if efi.is_network(boot["entries"][n])] == ["0002", "0003"]
    # Without device paths no entry is known to be the disk's: nothing is moved on a guess.
    assert efi.os_entry(boot) is None and efi.wanted_order(boot) == boot["order"]


@pytest.mark.parametrize("rc, err, said", [
    (2, text("efibootmgr-no-efi.err"), "efibootmgr exited 2: EFI variables are not supported on this system."),
    (127, "efibootmgr: not found", "efibootmgr is not installed"),
])
def test_a_boot_order_that_cannot_be_read_says_why(rc, err, said):
    with pytest.raises(Unavailable, match="^%s$" % said.replace(".", r"\.")):
        efi.read(host(SPARK, {EFI: (rc, "", err)}))


# -- fan floor --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("trees, module_file, show, missing", [
    (["fan-whole"], 0, RUNNING, None),
    (["fan-whole"], 0, ENABLED_NOT_RUNNING, "unit running"),
    (["fan-whole"], 0, NOT_FOUND, "unit installed"),
    (["fan-loaded-no-device"], 0, RUNNING, "cooling device"),
    (["fan-none"], 0, RUNNING, "module loaded"),
    (["fan-none"], 1, NOT_FOUND, "module file"),
])
def test_only_the_first_missing_layer_of_the_fan_floor_counts(tmp_path, trees, module_file, show, missing):
    modinfo = (0, text("modinfo-filename-dkms.txt"), "") if module_file == 0 else (1, "", text("modinfo-not-found.err"))
    state = fan.read(host(tree(tmp_path, *trees), {MODINFO: modinfo, SHOW: (0, show, "")}), "7.0.0-1019-nvidia")
    assert fan.first_missing(state) == missing


def test_the_cooling_device_is_found_by_its_type():
    node = host(SPARK / "fan-whole", {})
    assert fan.cooling_devices(node) == ["cooling_device1"]


# -- DRM card ---------------------------------------------------------------------------------------------------------

def test_the_spark_card_is_nvidias_and_its_connectors_are_not_cards():
    cards = drm.cards(host(SPARK / "drm-spark", {}))
    assert cards == [{"card": "card0", "minor": 0, "driver": "nvidia", "pci_id": "10DE:2E12",
                      "slot": "000f:01:00.0"}]
    assert drm.masters(host(SPARK / "drm-spark", {}), cards[0]) == []


def test_the_nvidia_card_need_not_be_card0():
    card = drm.nvidia_card(drm.cards(host(SPARK / "drm-three-cards", {})))
    assert (card["card"], card["minor"], card["pci_id"]) == ("card1", 1, "10DE:134D")
    assert drm.nvidia_card(drm.cards(host(SPARK / "drm-no-nvidia", {}))) is None


@pytest.mark.parametrize("name, holder", [
    ("dri-clients-xorg-master-pid.txt", ("Xorg", 2344)),          # before Linux 6.4: a pid column
    ("dri-clients-xorg-master-tgid.txt", ("Xorg", 830)),           # since: tgid
    ("dri-clients-logind-master-client-id.txt", ("systemd-logind", 1056)),   # with name and client-id
    ("dri-clients-kmstest-master.txt", ("kmstest", 1038)),
])
def test_the_master_is_found_by_its_column_in_every_recorded_format(name, holder):
    clients = drm.parse_clients(text(name))
    assert [(c["command"], c["pid"]) for c in clients if c["master"]] == [holder]
    assert len(clients) == len(text(name).strip().splitlines()) - 1


def test_a_command_with_a_space_keeps_the_other_columns_in_place():
    # Constructed: the first recorded tgid table with a process whose name holds a space (comm may).
    lines = text("dri-clients-xorg-master-tgid.txt").splitlines()
    lines[2] = "         Web Content   880   0   n    y     0          1"
    assert drm.parse_clients("\n".join(lines))[1] == {"command": "Web Content", "pid": 880, "master": False}


def test_an_unreadable_clients_file_is_not_taken_for_no_master():
    card = drm.cards(host(SPARK / "drm-three-cards", {}))[1]
    with pytest.raises(Unavailable, match="dri/1/clients is not readable"):
        drm.masters(host(SPARK / "drm-three-cards", {}), card)


# -- DGX OS release ---------------------------------------------------------------------------------------------------

def test_dgx_release_names_the_last_ota_and_never_the_serial():
    found = dgx_os.parse_release(text("dgx-release-spark-ota-7.5.0.txt"))
    assert found == {"name": "DGX Spark", "build": "7.2.3", "ota": "7.5.0"}


@pytest.mark.parametrize("answer, meets", [
    ((0, text("dpkg-query-meta-26.09.2.txt"), ""), True),
    ((0, text("dpkg-query-meta-26.04.1.txt"), ""), False),
    ((1, "", text("dpkg-query-not-installed.err")), False),
])
def test_the_release_is_the_meta_packages_version_against_the_floor(answer, meets):
    found = dgx_os.read(host(SPARK, {META: answer}))  # no etc/dgx-release there: the meta package alone decides
    assert dgx_os.meets(found, "26.09.2") is meets


def test_versions_compare_by_their_dotted_numbers():
    assert dpkg.parse_query(0, text("dpkg-query-bash-installed.txt")) == "5.2.15-2+b8"
    assert dpkg.parse_query(0, "config-files 26.09.2\n") is None  # removed, its configuration left
    assert dpkg.at_least("26.10.0", "26.09.2") and dpkg.at_least("26.09.2", "26.09.2")
    assert not dpkg.at_least("26.09.1", "26.09.2") and not dpkg.at_least("7.6.0", "26.09.2")
    assert dpkg.numbers("50.0-2ubuntu0.2") == (50, 0)


# -- the module over a recorded Spark ---------------------------------------------------------------------------------

def spark(tmp_path, efi_out="efibootmgr-v-dgx1-os-first.txt", fan_tree="fan-whole", drm_tree="drm-spark",
          unit=RUNNING, meta="dpkg-query-meta-26.09.2.txt", release="dgx-release-spark-ota-7.5.0.txt"):
    root = tree(tmp_path, fan_tree, drm_tree)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "dgx-release").write_text(text(release))
    return host(root, {GPU_QUERY: GB10, EFI: (0, text(efi_out), ""), SHOW: (0, unit, ""),
                       MODINFO: (0, text("modinfo-filename-dkms.txt"), ""), META: (0, text(meta), "")})


def run(node, monkeypatch, check_mode=True, **params):
    module = FakeModule(dict({"dgx_os_min": "26.09.2", "boot_order_ok": False, "fan_unit": fan.UNIT}, **params),
                        check_mode)
    return outcome(spark_host, module, node, monkeypatch), module


def test_a_spark_as_it_should_be_has_nothing_to_say(tmp_path, monkeypatch):
    result, module = run(spark(tmp_path), monkeypatch)
    assert not result.get("failed") and result["findings"] == [] and result["changed"] is False
    assert result["readings"]["dgx_os"]["meta"] == "26.09.2" and module.commands == []


def rows(result, node="dgx3"):
    return drift.dedupe(drift.rows_from_result(node, "host_baseline", "DGX Spark host checks", result))


def test_a_bad_spark_gives_one_row_per_finding_each_with_its_object_and_fix(tmp_path, monkeypatch):
    node = spark(tmp_path, efi_out="efibootmgr-v-dgx3-pxe-first.txt", meta="dpkg-query-meta-26.04.1.txt")
    (tmp_path / "root" / "sys/kernel/debug/dri/0/clients").write_text(text("dri-clients-xorg-master-tgid.txt"))
    result, module = run(node, monkeypatch)
    assert result["failed"] and module.commands == []  # errors fail the step, in check mode too
    table = {(r["object"]["kind"], r["object"]["name"]): r for r in rows(result)}
    assert set(table) == {("uefi", "BootOrder"), ("drm", "card0"), ("package", "dgx-spark-ota-update-meta")}
    assert table[("uefi", "BootOrder")]["severity"] == "warn"
    assert table[("uefi", "BootOrder")]["fix"] == (
        "ds41f run host_baseline -e '{\"host_baseline_boot_order_ok\": true}' (on the node: efibootmgr --bootorder "
        "0004,0002)")
    assert table[("drm", "card0")]["found"] == "held by Xorg (pid 830)" and "kill 830" in table[("drm", "card0")]["fix"]
    assert table[("package", "dgx-spark-ota-update-meta")]["found"] == (
        "dgx-spark-ota-update-meta 26.04.1; DGX Spark 7.5.0")
    assert "DGX OS release" in result["msg"] and "DRM master" in result["msg"] and "BootOrder" not in result["msg"]


def test_with_consent_the_os_entry_goes_first_and_only_outside_check_mode(tmp_path, monkeypatch):
    node = spark(tmp_path, efi_out="efibootmgr-v-dgx3-pxe-first.txt")
    result, module = run(node, monkeypatch, boot_order_ok=True)
    assert result["findings"] == [] and result["actions"] == ["efibootmgr --bootorder 0004,0002"]
    assert rows(result)[0]["object"] == {"node": "dgx3", "kind": "uefi", "name": "BootOrder"}
    assert module.commands == []
    result, module = run(node, monkeypatch, check_mode=False, boot_order_ok=True)
    assert module.commands == [["efibootmgr", "--bootorder", "0004,0002"]] and not result.get("failed")


def test_an_installed_fan_unit_that_is_off_is_enabled_and_started(tmp_path, monkeypatch):
    result, module = run(spark(tmp_path, unit=ENABLED_NOT_RUNNING), monkeypatch, check_mode=False)
    assert result["actions"] == ["systemctl enable --now dgx-fan-control.service"] and not result.get("failed")
    assert module.commands == [["systemctl", "enable", "--now", "dgx-fan-control.service"]]
    assert rows(result)[0]["object"]["kind"] == "unit" and rows(result)[0]["fix"] == "ds41f run host_baseline"


def test_no_fan_floor_is_one_error_naming_the_first_missing_layer(tmp_path, monkeypatch):
    result, _ = run(spark(tmp_path, fan_tree="fan-loaded-no-device", unit=NOT_FOUND), monkeypatch)
    (row,) = rows(result)
    assert (row["setting"], row["severity"]) == ("fan floor: cooling device", "error")
    assert row["object"]["name"] == "dgx_ec_fan_floor" and "journalctl -k" in row["fix"]


# Every layer the module reports, from fan.LAYERS: the recorded state whose first missing layer it is.
LAYER_STATES = {"module file": ("fan-none", NOT_FOUND, False), "module loaded": ("fan-none", NOT_FOUND, True),
                "cooling device": ("fan-loaded-no-device", NOT_FOUND, True),
                "unit installed": ("fan-whole", NOT_FOUND, True)}


@pytest.mark.parametrize("layer", [layer for layer in fan.LAYERS if layer != "unit running"])
def test_each_missing_fan_layer_is_one_row_about_its_own_object(tmp_path, monkeypatch, layer):
    fan_tree, unit, built = LAYER_STATES[layer]
    node = spark(tmp_path, fan_tree=fan_tree, unit=unit)
    if not built:
        node._run.answers[MODINFO] = (1, "", text("modinfo-not-found.err"))
    result, _ = run(node, monkeypatch)
    (row,) = rows(result)
    kind, name = spark_host.FAN_FINDINGS[layer][2]
    assert row["setting"] == "fan floor: " + layer and row["severity"] == "error" and result["failed"]
    assert (row["object"]["kind"], row["object"]["name"]) == (kind, name.format(unit=fan.UNIT))


def test_no_nvidia_drm_card_is_an_error_with_the_reboot_fix(tmp_path, monkeypatch):
    result, _ = run(spark(tmp_path, drm_tree="drm-no-nvidia"), monkeypatch)
    (row,) = rows(result)
    assert row["found"] == "card0 (i915)" and "host_baseline_reboot_ok" in row["fix"]


@pytest.mark.parametrize("marker, reason", [(None, "not a DGX Spark (no GB10 found)"),
                                            ("run/.containerenv", "not a DGX Spark (a podman container)")])
def test_off_a_spark_each_check_is_listed_as_not_checked_with_the_reason(tmp_path, monkeypatch, marker, reason):
    root = tmp_path / "root"
    if marker:
        (root / marker).parent.mkdir(parents=True)
        (root / marker).write_text("")
    root.mkdir(exist_ok=True)
    node = host(root, {GPU_QUERY: NO_GPU})
    result, module = run(node, monkeypatch)
    assert node._run.calls == [list(GPU_QUERY)]  # nothing else is read
    assert drift.not_checked("dgx1", "DGX Spark host checks", result) == [
        {"node": "dgx1", "check": check, "reason": reason} for check in spark_host.CHECKS]
