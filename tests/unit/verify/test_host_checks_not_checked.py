"""On a lab node (the recorded tests/fixtures/platform/labnode: a podman container, no nvidia-smi) each of the seven
host checks the seeds' doctor makes is listed as not checked, with the reason, by the step of the stage that owns
it - never passed, never dropped."""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift
from ansible_collections.dgxspark.ds41f.plugins.modules import fabric_inventory, grub_boot, spark_host
from tests.conftest import FIXTURES
from tests.unit.recorded_spark import GPU_QUERY, NO_GPU, FakeModule, host, outcome

LAB_NODE = FIXTURES / "platform" / "labnode"
SEVEN = ["CX7 firmware", "DGX OS release", "DRM card", "UEFI boot order", "fan floor",
         "kho=off on the kernel command line", "rdma-core version"]


def test_a_lab_node_lists_each_of_the_seven_as_not_checked(tmp_path, monkeypatch):
    steps = [
        (spark_host, {"dgx_os_min": "26.09.2", "boot_order_ok": False, "fan_unit": "dgx-fan-control.service"}),
        (grub_boot, {"want": "7.0.0-1019-nvidia-64k", "stock": "7.0.0-1019-nvidia", "record": str(tmp_path / "b.json"),
                     "arm": False, "cancel_once": False, "backup_dir": str(tmp_path / "before"), "cmdline": ["kho=off"],
                     "pin": True}),
        (fabric_inventory, {}),
    ]
    results = [dict(outcome(module, FakeModule(params), host(LAB_NODE, {GPU_QUERY: NO_GPU}), monkeypatch),
                    step=module.__name__.rsplit(".", 1)[-1]) for module, params in steps]
    skipped = drift.not_checked_list(drift.not_checked("dgx1", "audit", {"results": results}))
    listed = {i["check"]: i["reason"] for i in skipped if i["check"] in SEVEN}
    assert sorted(listed) == SEVEN
    assert set(listed.values()) == {"not a DGX Spark (a podman container)"}
    assert all(not r.get("failed") and not r.get("findings") for r in results)
