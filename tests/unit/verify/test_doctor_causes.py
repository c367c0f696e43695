"""Rows are causes: how failed tasks, skipped checks and a fabric path's echoes become the doctor's rows, and the
live checks that name what a real Spark drifts on (readings from tests/fixtures/doctor, see its SOURCE.md)."""

import json
import sys

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, live_checks, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils import memory_saver_state as ms
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dkms
from tests.conftest import FIXTURES, ROOT
from tests.unit.memory_saver.test_state_machine import K4, WANT, modinfo, readings, text

DOCTOR = FIXTURES / "doctor"
SITE = {"plugin": "dgxspark.ds41f.spark_topology", "shape": "tp3-triangle-4k",
        "nodes": [{"name": "dgx%d" % i, "address": "192.168.1.1%d" % i} for i in (1, 2, 3)]}


def ends(cluster):
    return {(n.name, link["netdev"]): link["cidr"] for n in cluster.nodes for link in cluster.links(n.name)}


def link_row(node, netdev, aspect, expected, found, fix, stage="fabric"):
    """A row about one part (``aspect``) of a CX7 link, as the fabric stage and the live check give one (their own
    rows: tests/unit/verify/test_fabric_fold.py)."""
    return drift.row(node, stage, "%s %s" % (netdev, aspect), expected, found, fix,
                     about={"kind": "link", "name": netdev}, aspect=aspect)


# -- failed tasks and what was not checked ---------------------------------------------------------


def test_a_failed_check_becomes_the_causes_it_names_on_their_nodes():
    result = {"failed": True, "msg": "fabric preflight failed on dgx1; nothing was changed: ...",
              "drift": [{"setting": "enp1s0f0np0 link", "expected": "present", "found": "missing", "fix": "re-plug"}]}
    rows = drift.rows_from_result("dgx1", "fabric", "Every CX7 netdev exists", result)
    assert [(r["node"], r["setting"], r["found"]) for r in rows] == [("dgx1", "enp1s0f0np0 link", "missing")]
    preflight = {"drift": [{"node": "dgx3", "setting": "file /etc/ds41f/nccl.env", "expected": "present",
                            "found": "absent", "fix": "run the fabric stage"}]}
    assert drift.rows_from_result("dgx1", "serve", "Preflight", preflight)[0]["node"] == "dgx3"


def test_a_failure_that_names_no_cause_never_claims_the_task_should_succeed():
    [r] = drift.rows_from_result("dgx2", "kernel", "Pin GRUB", {"failed": True, "msg": "grub-editenv: not found"})
    assert r["expected"] != "the task succeeds" and r["found"] == "grub-editenv: not found"
    assert r["expected"] != r["found"] and "--limit dgx2" in r["fix"]


def test_a_change_without_drift_names_its_file():
    [r] = drift.rows_from_result("dgx1", "site_config", "Node map", {"changed": True, "dest": "/etc/ds41f/site.json"})
    assert r["setting"] == "/etc/ds41f/site.json (Node map)"


def test_a_row_whose_found_is_its_expected_is_no_drift():
    record = drift.row("dgx1", "model", "verification record", "6 of 6 files verified", "6 of 6 files verified", "x")
    real = drift.row("dgx1", "model", "file model.safetensors", "sha256 ab", "sha256 cd", "ds41f run model")
    assert drift.dedupe([record, real]) == [real]


@pytest.mark.parametrize("result, expected", [
    ({"skipped_checks": [{"check": "GPU clock latch", "reason": "not a DGX Spark"}]},
     [("dgx1", "GPU clock latch", "not a DGX Spark")]),
    ({"skipped_reason": "GRUB not applied: container"}, [("dgx1", "Pin GRUB", "GRUB not applied: container")]),
    ({"skipped": ["cpu governor skipped: not a DGX Spark (a podman container)"]},
     [("dgx1", "cpu governor", "not a DGX Spark (a podman container)")]),
    ({"rows": [{"node": "dgx1", "netdev": "enp1s0f0np0", "check": "gid", "status": "skipped",
                "message": "no RDMA device (lab)"}, {"node": "dgx1", "status": "ok"}]},
     [("dgx1", "enp1s0f0np0 gid", "no RDMA device (lab)")]),
    ({"skipped": True, "msg": "node qualification skipped: not a DGX Spark"},
     [("dgx1", "Pin GRUB", "node qualification skipped: not a DGX Spark")]),
    ({"skipped": True, "false_condition": "x", "skip_reason": "Conditional result was False"}, []),
])
def test_every_way_a_module_says_it_did_not_check_is_listed(result, expected):
    found = drift.not_checked("dgx1", "Pin GRUB", result)
    assert [(i["node"], i["check"], i["reason"]) for i in found] == expected


def test_not_checked_lines_group_nodes_and_markdown_lists_them():
    items = [{"node": n, "check": "GPU clock latch", "reason": "not a DGX Spark"} for n in ("dgx2", "dgx1", "dgx1")]
    assert drift.not_checked_lines(items) == ["not checked: GPU clock latch on dgx1, dgx2: not a DGX Spark"]
    md = drift.markdown([], not_checked=drift.not_checked_list(items))
    assert "## Not checked" in md and md.count("| GPU clock latch |") == 2


# -- a fabric path's cause and its echoes ----------------------------------------------------------


def test_a_pulled_cable_is_one_row_naming_both_ends_with_one_fix():
    cluster = topology.build(SITE)
    table = ends(cluster)
    cable = cluster.cable_table()[0]
    a, b = (cable["a"], cable["a_netdev"]), (cable["b"], cable["b_netdev"])
    rows = [link_row(a[0], a[1], "link", "present", "missing", "check the cable"),
            link_row(b[0], b[1], "link", "present", "missing", "check the cable"),
            link_row(b[0], b[1], "address", "10.0.0.2/24", None, "ip address replace ..."),
            drift.row(a[0], "fabric", "%s reachability" % a[1], "answered", "no answer", "ping",
                      path=cable["cidr"], aspect="reachability")]
    rows.append(dict(rows[0], stage="verify"))  # the live check sees the same missing link
    [r] = drift.dedupe(rows, table)
    assert r["found"].count("link missing") == 2  # once per end
    assert r["node"] == a[0] and "%s %s" % a in r["setting"] and "%s %s" % b in r["setting"]
    assert "re-plug the cable" in r["fix"] and "ip address" not in r["fix"]
    assert drift.path_status([r], [cable["cidr"]]) == {cable["cidr"]: "down"}


def test_no_carrier_at_one_end_explains_the_far_ends_lost_address():
    cluster = topology.build(SITE)
    cable = cluster.cable_table()[0]
    rows = [link_row(cable["a"], cable["a_netdev"], "carrier", "up", "down, carrier off", "reseat"),
            link_row(cable["b"], cable["b_netdev"], "address", "10.0.0.2/24", None, "ip address ...")]
    [r] = drift.dedupe(rows, ends(cluster))
    assert r["node"] == cable["a"] and r["fix"] == "reseat" and "address (absent)" in r["found"]


def test_an_mtu_and_an_address_on_different_ends_are_two_causes():
    cluster = topology.build(SITE)
    cable = cluster.cable_table()[0]
    rows = [link_row(cable["a"], cable["a_netdev"], "mtu", 9000, 1500, "ip link set"),
            link_row(cable["b"], cable["b_netdev"], "address", "10.0.0.2/24", None, "ds41f run fabric")]
    assert len(drift.dedupe(rows, ends(cluster))) == 2


def test_the_picture_colours_only_what_a_check_read():
    rows = [drift.row("dgx2", "fabric", "x mtu", 9000, 1500, "fix", path="10.12.1.0/24")]
    assert drift.node_status(rows, ["dgx1", "dgx2", "dgx3"], {"dgx1"}) == {
        "dgx1": "ok", "dgx2": "drift", "dgx3": "unchecked"}
    assert drift.path_status(rows, ["10.13.1.0/24"]) == {"10.13.1.0/24": "ok", "10.12.1.0/24": "drift"}
    assert drift.path_status(rows) == {"10.12.1.0/24": "drift"}


# -- the serving group -----------------------------------------------------------------------------


def rank(running=True, status="running", exit_code=0, logs=None, guard="active"):
    state = {"name": "spark-ds41f", "running": running, "status": status, "exit_code": exit_code, "logs": logs}
    return {"live": {"container": state, "launch_spec": {"name": "spark-ds41f"},
                     "guard": {"active": guard, "sub": "running" if guard == "active" else "dead",
                               "result": "success"}}}


def api_reading(name):
    return json.loads((DOCTOR / "api" / name).read_text())


def test_a_serving_group_in_health_has_no_findings():
    hosts = {"dgx1": rank(), "dgx2": rank(), "dgx3": rank()}
    hosts["dgx1"]["live"]["api"] = api_reading("answering.json")
    assert live_checks.serving_group(hosts, "dgx1", "ds41f-memguard.service", ["deepseek-v4.1-flash"]) == ([], [])


def test_a_dead_rank_its_exit_code_and_last_log_lines_and_a_disruptive_group_restart():
    hosts = {"dgx1": rank(), "dgx2": rank(guard="inactive"),
             "dgx3": rank(False, "exited", 137, ["INFO engine core busy", "Terminated"])}
    hosts["dgx3"]["live"]["container"]["logs"] = ["INFO engine core busy", "Terminated"]
    hosts["dgx1"]["live"]["api"] = api_reading("answering.json")
    findings, unchecked = live_checks.serving_group(hosts, "dgx1", "ds41f-memguard.service", ["deepseek-v4.1-flash"])
    by_node = {f["node"]: f for f in findings}
    assert set(by_node) == {"dgx2", "dgx3"} and unchecked == []
    assert by_node["dgx3"]["found"].startswith("exited (exit code 137)") and "Terminated" in by_node["dgx3"]["found"]
    assert "disruptive" in by_node["dgx3"]["fix"] and "serve_replace" in by_node["dgx3"]["fix"]
    assert by_node["dgx2"]["setting"] == "unit ds41f-memguard.service (memory guard)"
    assert "systemctl start ds41f-memguard.service" in by_node["dgx2"]["fix"]


def test_an_absent_rank_and_a_cluster_that_serves_nowhere():
    hosts = {"dgx1": rank(), "dgx2": {"live": {"container": None, "launch_spec": {"name": "spark-ds41f"}}}}
    findings, _ = live_checks.serving_group(hosts, "dgx1", "", [])
    assert [(f["node"], f["found"]) for f in findings] == [("dgx2", "absent")]
    idle = {n: {"live": {"container": None, "launch_spec": {"name": "spark-ds41f"}}} for n in ("dgx1", "dgx2")}
    findings, unchecked = live_checks.serving_group(idle, "dgx1", "", [])
    assert findings == [] and [u["node"] for u in unchecked] == ["dgx1", "dgx2"]


def test_a_rank_whose_docker_does_not_answer_is_unknown_not_absent():
    """Docker stopped on dgx2: its container could not be read. Its unit's row is the cause; the group's check
    names no rank there (live_state lists it as not checked)."""
    hosts = {"dgx1": rank(), "dgx2": {"live": {"container": None, "launch_spec": {"name": "spark-ds41f"},
                                               "container_unread": "docker does not answer on this node (refused)"}}}
    assert live_checks.serving_group(hosts, "dgx1", "", []) == ([], [])


def test_an_engine_whose_container_runs_but_whose_api_does_not_answer():
    hosts = {"dgx1": rank()}
    hosts["dgx1"]["live"]["api"] = api_reading("paused.json")  # docker pause: the container runs, nothing answers
    findings, _ = live_checks.serving_group(hosts, "dgx1", "", ["deepseek-v4.1-flash"])
    assert [f["setting"] for f in findings] == ["API http://127.0.0.1:8000/health", "API http://127.0.0.1:8000/v1/models"]
    assert [f["found"] for f in findings] == ["timed out", "timed out"]
    assert all("docker logs spark-ds41f on dgx1" in f["fix"] for f in findings)
    assert all(f["expected"] != f["found"] for f in findings)


# -- what a real Spark drifts on ------------------------------------------------------------------


def test_nvidia_drm_modeset_off():
    folder = DOCTOR / "nvidia_drm" / "modeset-off"  # as /sys/module/nvidia_drm/parameters reads
    params = {f.name: f.read_text().strip() for f in folder.iterdir()}
    found = live_checks.nvidia_drm("dgx1", params)
    assert [(f["setting"].split()[1], f["found"]) for f in found] == [("modeset", "N")]
    assert live_checks.nvidia_drm("dgx1", {"modeset": "Y", "fbdev": "Y"}) == []


def test_a_node_waiting_for_its_64k_kernel_boot():
    r = readings(running=K4, dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                 uvm_disk=modinfo("dkms-installed"))
    [f] = live_checks.memory_saver("dgx2", ms.assess(r, WANT), r, WANT)
    assert f["stage"] == "kernel" and f["expected"] == WANT["kernel"] and f["found"].startswith(K4)
    assert "reboot dgx2" in f["fix"]


def test_the_memory_saver_installed_but_not_loaded_or_loaded_without_packing():
    installed = dict(dkms=dkms.parse_status(text("dkms/status-memory-saver-installed.txt")),
                     uvm_disk=modinfo("dkms-installed"))
    r = readings(uvm_loaded={"loaded": False}, **installed)
    [f] = live_checks.memory_saver("dgx1", ms.assess(r, WANT), r, WANT)
    assert f["found"] == "installed, not loaded"
    r = readings(uvm_loaded={"loaded": True, "srcversion": modinfo("dkms-installed")["srcversion"],
                             "parameters": {ms.PACKING: "N"}}, uvm_in_use=True, **installed)
    [f] = live_checks.memory_saver("dgx1", ms.assess(r, WANT), r, WANT)
    assert f["setting"] == "nvidia_uvm parameter %s" % ms.PACKING and f["found"] == "N"


# -- the callback: a stage that failed once on a node -----------------------------------------------


class _Task:
    """A role's task as the callback sees it: Task.get_name() puts the role's name before the task's."""

    def __init__(self, name, role, action="dgxspark.ds41f.some_check"):
        self.name, self.action, self.role = name, action, role

    def get_name(self):
        return "dgxspark.ds41f.%s : %s" % (self.role, self.name)


class _Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


def folded(cb):
    """The verdict task's table from what the callback collected (doctor_report computes it so)."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import doctor_verdict

    return doctor_verdict.verdict(cb.findings(), cb.site)["rows"]


class _Result:
    def __init__(self, node, task, result):
        self.host, self.task, self.result = _Host(node), task, result


def test_a_stages_later_failures_on_a_node_are_not_checked_with_the_first_cause_as_reason():
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda *a, **k: None, "warning": lambda *a, **k: None})()
    cb.v2_runner_on_failed(_Result("dgx3", _Task("Every CX7 netdev exists", "fabric"), {
        "msg": "fabric preflight failed", "drift": [{"setting": "enP2p1s0f1np1 link", "expected": "present",
                                                      "found": "missing"}]}), ignore_errors=True)
    cb.v2_runner_on_failed(_Result("dgx3", _Task("Live CX7 state", "fabric"), {"msg": "no netdev"}), True)
    cb.v2_runner_on_failed(_Result("dgx3", _Task("Serve preflight", "serve"), {"msg": "no reading"}), True)
    cb.v2_runner_on_skipped(_Result("dgx3", _Task("End", "serve", "ansible.builtin.meta"), {"msg": "end_host"}))
    assert [(r["stage"], r["setting"]) for r in cb.rows] == [
        ("fabric", "enP2p1s0f1np1 link"), ("serve", "Serve preflight (a check that named no cause)")]
    assert cb.skipped == [{"node": "dgx3", "check": "fabric: Live CX7 state", "reason": "after an earlier finding of "
                           "the fabric stage: dgx3 enP2p1s0f1np1 link is missing (expected present)"}]


def test_doctor_collective_prints_the_verdict_once():
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    shown = []
    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda self, m, **k: shown.append(m), "warning": lambda *a, **k: None})()
    verdict = {"ok": True, "message": "collective check ok: 4 ranks met at 172.30.82.11:10000; ...",
               "lines": ["rank node     ok     join s  group s   busbw MB/s"]}
    task = _Task("One verdict over every rank", "serve", "ansible.builtin.set_fact")
    for node in ("dgx1", "dgx2"):
        cb.v2_runner_on_ok(_Result(node, task, {"ansible_facts": {"serve_collective_verdict": verdict}}))
    assert shown == ["  collective check ok: 4 ranks met at 172.30.82.11:10000; ...\n"
                     "  rank node     ok     join s  group s   busbw MB/s"]


def test_without_matplotlib_the_doctor_still_writes_its_svg_and_says_the_png_is_missing(tmp_path, monkeypatch):
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    warned = []
    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda *a, **k: None, "warning": lambda self, m: warned.append(m)})()
    cb.site = yaml.safe_load(next((ROOT / "inventories" / "ring4").glob("*.spark.yml")).read_text())
    monkeypatch.setattr(cb, "get_option", lambda name: name == "png")  # ds41f doctor --png
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    written = cb._picture(str(tmp_path), {"nodes": {}, "paths": {}})
    assert written == [str(tmp_path / "topology.svg")] and "dgx1" in (tmp_path / "topology.svg").read_text()
    assert not (tmp_path / "topology.png").exists()
    assert warned and "topology.png not drawn" in warned[0] and "pip install matplotlib" in warned[0]


def test_a_hung_group_whose_api_answers_is_one_progress_row_with_the_group_restart_fix():
    """The answering reading (recorded) with the progress probe's verdict on a stopped VLLM::Worker."""
    hosts = {"dgx1": rank()}
    hosts["dgx1"]["live"]["api"] = dict(api_reading("answering.json"), progress={
        "state": "stalled", "ok": False, "seen": "1 request(s) running, no prompt or generated token in 20 s"})
    findings, _ = live_checks.serving_group(hosts, "dgx1", "", ["deepseek-v4.1-flash"])
    assert [(f["node"], f["setting"], f["found"]) for f in findings] == [
        ("dgx1", "engine progress (http://127.0.0.1:8000)",
         "1 request(s) running, no prompt or generated token in 20 s")]
    assert "serve_replace" in findings[0]["fix"] and findings[0]["severity"] == "error"
    hosts["dgx1"]["live"]["api"]["progress"] = {"state": "moving", "ok": True, "seen": "a prefill"}
    assert live_checks.serving_group(hosts, "dgx1", "", ["deepseek-v4.1-flash"]) == ([], [])


def test_the_watchdogs_open_breaker_or_failed_restart_is_a_row_one_good_restart_is_none():
    assert live_checks.watchdog_findings("dgx1", None) == []
    assert live_checks.watchdog_findings("dgx1", {"breaker": "closed", "restarts": 1, "last_restart": 5.0,
                                                  "last_restart_ok": True}) == []
    (row,) = live_checks.watchdog_findings("dgx1", {"breaker": "open", "reason": "stalled again 60 s after"})
    assert row["setting"] == "serving watchdog (circuit breaker)" and row["found"] == "open: stalled again 60 s after"
    (row,) = live_checks.watchdog_findings("dgx1", {"last_restart": 5.0, "last_restart_ok": False,
                                                    "last_restart_result": "not ready within 900 s of the restart"})
    assert row["found"] == "not ready within 900 s of the restart" and row["expected"] != row["found"]
    # a restart that could not run (it is not counted): a row of its own, until a later restart runs
    failed = {"restarts": 0, "last_restart": None, "failed_restarts": 1, "last_failed_restart": 7.0,
              "last_failure": "ssh ...: exit 255: Host key verification failed.", "verdict": "stalled"}
    (row,) = live_checks.watchdog_findings("dgx1", failed)
    assert row["setting"] == "serving watchdog (restart could not run)" and "Host key" in row["found"]
    assert "pinned host keys" in row["fix"]
    assert live_checks.watchdog_findings("dgx1", dict(failed, last_restart=9.0, last_restart_ok=True)) == []
    assert live_checks.watchdog_findings("dgx1", dict(failed, verdict="answering")) == []


def test_every_object_a_step_declares_is_listed_once_in_doctor_json_with_its_node_and_stage(tmp_path, monkeypatch):
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda *a, **k: None, "warning": lambda *a, **k: None})()
    monkeypatch.setattr(cb, "get_option", lambda name: None)
    steps = {"results": [
        {"step": "Files", "managed": [{"kind": "file", "name": "/etc/a", "mode": "0644"}], "changed": False},
        {"step": "Units", "managed": [{"kind": "unit", "name": "x.service", "policy": "enable"}],
         "changed": True, "drift": [{"setting": "x.service", "expected": "enabled, active", "found": "disabled, -"}]},
    ]}
    task = _Task("Host baseline steps", "host_baseline", "dgxspark.ds41f.node_steps")
    for node in ("dgx1", "dgx2"):
        cb.v2_runner_on_ok(_Result(node, task, steps))
    cb.v2_runner_on_ok(_Result("dgx1", task, steps))  # the same declaration again: listed once
    cb._write(str(tmp_path), folded(cb), None)
    managed = json.loads((tmp_path / "doctor.json").read_text())["managed"]
    assert [(m["node"], m["stage"], m["kind"], m["name"]) for m in managed] == [
        ("dgx1", "host_baseline", "file", "/etc/a"), ("dgx1", "host_baseline", "unit", "x.service"),
        ("dgx2", "host_baseline", "file", "/etc/a"), ("dgx2", "host_baseline", "unit", "x.service")]
    assert managed[0]["mode"] == "0644"
    assert sorted((r["node"], r["setting"]) for r in folded(cb)) == [("dgx1", "x.service"), ("dgx2", "x.service")]


def test_a_message_marked_changed_to_notify_is_no_row_the_file_that_changed_is():
    """The host baseline's follow-up work (a debug task, changed so that its handlers run) is the consequence of
    the file's own drift row; `--check --diff` still prints it, the doctor's table does not repeat it."""
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda *a, **k: None, "warning": lambda *a, **k: None})()
    edited = {"changed": True, "drift": [{"setting": "/etc/ssh/sshd_config.d/01-ds41f-recovery.conf",
                                           "expected": "line 2: MaxStartups 10:30:60", "found": "line 2: x"}]}
    cb.v2_runner_on_ok(_Result("dgx2", _Task("Recovery files", "host_baseline"), edited))
    cb.v2_runner_on_ok(_Result("dgx2", _Task("Follow-up work of the files that changed", "host_baseline",
                                             "ansible.builtin.debug"), {"changed": True, "msg": "reload ssh"}))
    cb.v2_runner_on_failed(_Result("dgx2", _Task("A failing message", "host_baseline", "ansible.builtin.debug"),
                                   {"msg": "boom"}), True)
    assert [(r["setting"], r["found"]) for r in folded(cb)] == [
        ("/etc/ssh/sshd_config.d/01-ds41f-recovery.conf", "line 2: x"),
        ("A failing message (a check that named no cause)", "boom")]
