"""The doctor's drift table: which task results become rows, their order, and the three renderings."""

import json

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift


def test_plan_drift_becomes_one_row_per_entry_with_its_fix():
    result = {"changed": True, "drift": [
        {"setting": "net.ipv4.ip_forward", "expected": "1", "found": "0", "fix": "sysctl -w net.ipv4.ip_forward=1"}]}
    rows = drift.rows_from_result("dgx2", "host_baseline", "Sysctls", result)
    assert rows == [{"node": "dgx2", "stage": "host_baseline", "setting": "net.ipv4.ip_forward", "expected": "1",
                     "found": "0", "fix": "sysctl -w net.ipv4.ip_forward=1", "severity": "error"}]


def test_a_change_without_drift_names_the_task_and_the_stage_to_rerun():
    rows = drift.rows_from_result("dgx1", "site_config", "Node map (site.json)", {"changed": True})
    assert [(r["setting"], r["fix"]) for r in rows] == [("Node map (site.json)", "ds41f run site_config")]


def test_unchanged_skipped_and_clean_results_add_nothing():
    assert drift.rows_from_result("dgx1", "s", "t", {"changed": False}) == []
    assert drift.rows_from_result("dgx1", "s", "t", {"skipped": True, "changed": True}) == []


def test_findings_keep_their_own_node_stage_severity_and_path():
    result = {"changed": False, "findings": [
        {"node": "dgx3", "stage": "fabric", "setting": "enp1s0f0np0 mtu", "expected": 9000, "found": 1500,
         "fix": "ip link set ...", "severity": "error", "path": "10.13.1.0/24"},
        {"node": "dgx1", "stage": "serve", "setting": "memory headroom", "expected": "> 4", "found": "3.5 GiB",
         "fix": "free memory", "severity": "warn"}]}
    rows = drift.rows_from_result("dgx1", "verify", "Compare", result)
    assert [(r["node"], r["stage"], r["severity"], r.get("path")) for r in rows] == [
        ("dgx3", "fabric", "error", "10.13.1.0/24"), ("dgx1", "serve", "warn", None)]
    assert rows[0]["expected"] == "9000" and rows[0]["found"] == "1500"


def test_loop_items_and_alignment_mismatches():
    loop = {"changed": True, "results": [{"changed": True, "drift": [{"setting": "a", "expected": 1, "found": 2}]},
                                         {"changed": False}]}
    assert [r["setting"] for r in drift.rows_from_result("n", "s", "t", loop)] == ["a"]
    aligned = {"failed": True, "msg": "nodes differ", "mismatches": [
        {"setting": "kernel", "found": "'a' on dgx1; 'b' on dgx2", "fix": "boot the same kernel"}]}
    rows = drift.rows_from_result("dgx1", "site_config", "Align", aligned)
    assert [(r["node"], r["setting"]) for r in rows] == [("all", "kernel")]  # no extra 'task failed' row


def test_a_failure_without_rows_is_an_error_row_with_its_message():
    rows = drift.rows_from_result("dgx1", "image", "Load", {"failed": True, "msg": "no space left\nmore"})
    assert rows[0]["found"] == "no space left" and rows[0]["severity"] == "error"


def test_dedupe_merges_the_same_finding_and_puts_errors_first():
    a = drift.row("dgx2", "fabric", "x mtu", 9000, 1500, "fix")
    w = drift.row("dgx1", "serve", "memory", 5, 4, "fix", "warn")
    assert drift.dedupe([w, a, dict(a)]) == [a, w]


def test_an_object_two_stages_keep_is_one_row_the_first_stages():
    """/etc/ds41f is kept by the fabric, site_config and serve stages: its mode changed is one cause."""
    rows = [drift.row("dgx1", stage, "/etc/ds41f attributes", "folder 0755 root:root", "folder 0666 root:root",
                      "chmod/chown /etc/ds41f") for stage in ("fabric", "site_config", "serve")]
    assert [r["stage"] for r in drift.dedupe(rows)] == ["fabric"]
    other = drift.row("dgx2", "serve", "/etc/ds41f attributes", "folder 0755 root:root", "folder 0666 root:root", "f")
    assert len(drift.dedupe(rows + [other])) == 2  # another node's is its own row


def test_an_image_or_checkpoint_that_differs_across_nodes_folds_into_the_node_that_is_wrong():
    """A tag removed on dgx3: the image stage names dgx3, so the live check's 'image_id the same on every node' is
    its echo. Without a node row (nothing names why), the cross-node row is the finding; another stage's stays."""
    spread = drift.row("all", "image", "image_id", drift.ACROSS_NODES, "'sha256:a' on dgx1, dgx2; None on dgx3",
                       "run the image stage", echo_of=drift.spread_echo("image"))
    tag = drift.row("dgx3", "image", "image ds41f-lab:lab-1", "sha256:a", "absent", "tag it")
    assert drift.dedupe([spread, tag]) == [tag]
    assert drift.dedupe([spread]) == [spread]
    preflight = drift.row("all", "image", "image ds41f-lab:lab-1 ID", drift.ACROSS_NODES, "707b on dgx1; f629 on dgx2",
                          "run the image stage", echo_of=drift.spread_echo("image"))  # the preflight's view of them
    assert drift.dedupe([spread, preflight, tag]) == [tag]
    assert drift.dedupe([spread, preflight]) == [spread]
    kernel = drift.row("all", "site_config", "kernel", drift.ACROSS_NODES, "'a' on dgx1; 'b' on dgx2", "boot",
                       echo_of=drift.spread_echo("site_config"))
    assert "echo_of" not in kernel  # a cross-node difference of another stage is a cause of its own
    shard = drift.row("dgx2", "model", "model-00001.safetensors", "sha256 x", "sha256 y", "ds41f run model")
    digest = drift.row("all", "model", "manifest_digest", drift.ACROSS_NODES, "'x' on dgx1; 'y' on dgx2", "run",
                       echo_of=drift.spread_echo("model"))
    assert drift.dedupe([kernel, tag, spread, shard, digest]) == [kernel, shard, tag]  # sorted by node


def test_the_serve_preflight_s_fabric_verdict_folds_into_the_fabric_check_s_rows():
    """An MTU set to 1500 at dgx2's end: the fabric stage names that end, the far end's failed ping is its echo, and
    the serve preflight's 'fabric check' row on each node (its refusal) repeats them. Without a fabric row (the
    serve stage run alone, its own read not in the table) the verdict is the only evidence and stays."""
    ends = {("dgx2", "enp1s0f0np0"): "10.23.1.0/24", ("dgx3", "enp1s0f1np1"): "10.23.1.0/24"}
    mtu = drift.row("dgx2", "fabric", "dgx2 enp1s0f0np0 mtu", 9000, 1500, "ip link set dev enp1s0f0np0 mtu 9000",
                    about={"kind": "link", "name": "enp1s0f0np0"}, aspect="mtu")
    ping = drift.row("dgx3", "fabric", "enp1s0f1np1 ping 10.23.1.2 size 8972", "reply", "no reply", "check the path",
                     path="10.23.1.0/24", aspect="reachability")
    verdicts = [drift.row(node, "serve", "fabric check", "every path passes", found, "run the fabric stage",
                          echo_of=drift.echo(path=True))
                for node, found in (("dgx2", "dgx2 enp1s0f0np0 MTU 1500 (expected 9000)"),
                                    ("dgx3", "no 9000-byte reply from dgx2 10.23.1.2 over dgx3 enp1s0f1np1"))]
    key = drift.row("dgx1", "serve", "/etc/ds41f/serve/api-key.env attributes", "0600", "0644", "chmod 0600")
    assert [r["setting"] for r in drift.dedupe([mtu, ping, key] + verdicts, ends)] == [
        "/etc/ds41f/serve/api-key.env attributes", "dgx2 enp1s0f0np0 mtu"]
    assert [r["node"] for r in drift.dedupe(verdicts + [key], ends)] == ["dgx1", "dgx2", "dgx3"]


def _cable_rows(cluster, node, peer, heard=None, running=True):
    """The doctor's rows of a node's cable checks towards ``peer``, as the fabric stage's module makes them."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
    rows = [fc.cable_row(node, link, heard, running) for link in cluster.links(node) if link["peer"] == peer]
    return drift.rows_from_result(node, "fabric", "Ping matrix", {"drift": fc.drift(rows)})


def _site(shape, n):
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology
    return topology.build({"shape": shape, "nodes": [{"name": "dgx%d" % i, "address": "192.168.1.%d" % (10 + i)}
                                                     for i in range(1, n + 1)]})


def test_cables_to_a_node_whose_lldpd_is_stopped_fold_into_its_lldpd_row_by_object():
    """lldpd stopped on dgx2 (the mutation test's trial): dgx1 and dgx3 hear no neighbour on their cables to it, and
    name dgx2's lldpd unit as their cause, which unit_policy's row on dgx2 carries as its object. A cable to a node
    whose lldpd has no row (dgx4 hears nothing from dgx1) is a finding of its own."""
    ring = _site("tp4-ring", 4)
    unit = drift.rows_from_result("dgx2", "fabric", "LLDP daemon enabled and running", {"changed": True, "drift": [
        {"setting": "lldpd", "expected": "enabled, active", "found": "enabled, inactive",
         "fix": "systemctl enable --now lldpd", "object": {"kind": "unit", "name": "lldpd"}}]})
    echoes = _cable_rows(ring, "dgx1", "dgx2") + _cable_rows(ring, "dgx3", "dgx2")
    other = _cable_rows(ring, "dgx4", "dgx1")
    assert len(echoes) == 4 and len(other) == 2
    assert {drift.key(r["cause"]) for r in echoes} == {("dgx2", "unit", "lldpd")}
    assert drift.dedupe(unit + echoes + other) == drift.dedupe(unit + other)
    assert [r["node"] for r in drift.dedupe(unit + echoes + other)] == ["dgx2", "dgx4", "dgx4"]
    assert len(drift.dedupe(echoes)) == 4  # without dgx2's row, they are the only sign


def test_a_frozen_node_is_one_row_its_neighbours_cables_and_unanswered_pings_fold_into_it():
    """dgx3 paused (frozen): ssh's keepalives find it silent (one row, its object the node), and dgx2 and dgx4 hear no
    LLDP from it; a node that refuses (unreachable) is the same. A path whose pings fail with no end explained names
    the far end's link, which folds into the far node's own row too. Another node's own fault stays."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
    ring = _site("tp4-ring", 4)
    silent = drift.unreachable_row("dgx3", "The node answers over SSH", {
        "msg": "Failed to connect to the host via ssh: Timeout, server 172.30.77.13 not responding."}, 15)
    assert silent["object"] == {"node": "dgx3", "kind": "node", "name": "dgx3"}
    cables = _cable_rows(ring, "dgx2", "dgx3") + _cable_rows(ring, "dgx4", "dgx3")
    link = next(item for item in ring.links("dgx2") if item["peer"] == "dgx3")
    lost = {"sent": 3, "received": 0, "loss_pct": 100.0, "rtt_avg_ms": None, "error": None, "ok": False}
    pings = drift.rows_from_result("dgx2", "fabric", "Ping matrix", {"drift": fc.drift([
        fc.path_row("dgx2", link, link["peers"][0], lost, 9000, None, None)])})
    assert pings[0]["cause"] == {"node": "dgx3", "kind": "link", "name": link["peer_netdev"]}
    own = _cable_rows(ring, "dgx4", "dgx1")  # dgx1's lldpd has no row: dgx4's cable to dgx1 is its own finding
    assert drift.dedupe([silent] + cables + pings + own) == drift.dedupe([silent] + own)
    assert len(drift.dedupe([silent] + cables + pings + own)) == 3
    refused = drift.unreachable_row("dgx3", "The node answers over SSH", {
        "msg": "Failed to connect to the host via ssh: ssh: connect to host 172.30.77.13 port 22: Connection refused"})
    assert drift.dedupe([refused] + cables + pings) == [refused]


def test_the_serve_preflight_s_checkpoint_verdict_folds_into_the_model_stage_s_row_on_that_node():
    """/etc/ds41f/model.json deleted on dgx1 (the mutation test's trial): the model stage names the file, and the
    serve preflight, which reads that file, says dgx1's checkpoint is not verified. Where the model stage has no row
    on a node (dgx2 here), the verdict is the only evidence and stays."""
    info = drift.row("dgx1", "model", "/etc/ds41f/model.json", "present", "absent", "write /etc/ds41f/model.json")
    verdicts = [drift.row(node, "serve", "checkpoint /var/lib/ds41f/models/m/0", "verified",
                          "/etc/ds41f/model.json names no verified checkpoint", "run the model stage",
                          echo_of=drift.echo(stage="model", node=node))
                for node in ("dgx1", "dgx2")]
    assert drift.dedupe([info] + verdicts) == [info, verdicts[1]]
    assert drift.dedupe(verdicts) == verdicts


def test_counts_status_and_table():
    rows = [drift.row("dgx2", "fabric", "enp1s0f1np1 mtu", 9000, 1500, "ip link set", path="10.12.1.0/24",
                      about={"kind": "link", "name": "enp1s0f1np1"}, aspect="mtu"),
            drift.row("all", "image", "image_id", "same", "a on dgx1; b on dgx2", "run image"),
            drift.row("dgx3", "fabric", "enp1s0f0np0 carrier", "up", "down", "reseat", path="10.13.1.0/24",
                      about={"kind": "link", "name": "enp1s0f0np0"}, aspect="carrier")]
    assert drift.counts(rows) == {"error": 3, "warn": 0}
    assert drift.node_status(rows, ["dgx1", "dgx2", "dgx3"]) == {"dgx1": "drift", "dgx2": "drift", "dgx3": "drift"}
    assert drift.path_status(rows) == {"10.12.1.0/24": "drift", "10.13.1.0/24": "down"}
    text = drift.table(rows)
    assert "enp1s0f1np1 mtu" in text and text.endswith("3 errors, 0 warnings")
    assert drift.table([]).startswith("No drift")


def test_markdown_escapes_pipes_and_json_round_trips(tmp_path):
    rows = [drift.row("dgx1", "serve", "env A", "x|y", "z", "fix")]
    md = drift.markdown(rows)
    assert "x\\|y" in md and md.count("\n| error |") == 1
    assert json.loads(json.dumps(drift.report(rows)))["counts"] == {"error": 1, "warn": 0}


def test_report_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(drift.REPORT_DIR_ENV, str(tmp_path))
    assert drift.report_dir() == str(tmp_path)
    monkeypatch.delenv(drift.REPORT_DIR_ENV)
    assert drift.report_dir("/x") == "/x/reports/doctor"


def test_a_fabric_path_folds_its_echoes_into_the_cause():
    """One wrong MTU as the fabric stage (check mode), its ping table and the live check all see it."""
    ends = {("dgx1", "enp1s0f0np0"): "10.12.1.0/24", ("dgx2", "enp1s0f1np1"): "10.12.1.0/24",
            ("dgx1", "enp1s0f1np1"): "10.13.1.0/24"}
    def about(netdev, aspect):  # what the stage, its ping matrix and the live check give as data (test_fabric_fold)
        return {"about": {"kind": "link", "name": netdev}, "aspect": aspect}

    rows = [
        drift.row("dgx2", "fabric", "dgx2 enp1s0f1np1 mtu", 9000, 1500, "ip link set dev enp1s0f1np1 mtu 9000",
                  **about("enp1s0f1np1", "mtu")),
        drift.row("dgx1", "fabric", "dgx1 enp1s0f0np0 path -> dgx2", "replies", "0/3 replies", "no reply",
                  path="10.12.1.0/24", aspect="reachability"),
        drift.row("dgx2", "fabric", "dgx2 enp1s0f1np1 link -> dgx1", "mtu 9000", "mtu 1500", "MTU 1500",
                  **about("enp1s0f1np1", "mtu")),
        drift.row("dgx2", "fabric", "enp1s0f1np1 mtu", 9000, 1500, "ip link set ... then ds41f run fabric",
                  **about("enp1s0f1np1", "mtu")),
        drift.row("dgx1", "fabric", "dgx1 enp1s0f1np1 path -> dgx3", "replies", "0/3 replies", "no reply",
                  path="10.13.1.0/24", aspect="reachability"),
        drift.row("dgx1", "fabric", "dgx1 enp1s0f1np1 path -> dgx3", "replies", "0/3 replies", "no reply",
                  path="10.13.1.0/24", aspect="reachability"),
        drift.row("all", "image", "image_id", "same", "differs", "run image"),
    ]
    out = drift.dedupe(rows, ends)
    assert [(r["node"], r["setting"], r.get("path")) for r in out] == [
        ("all", "image_id", None),
        ("dgx1", "dgx1 enp1s0f1np1 path -> dgx3", "10.13.1.0/24"),  # no cause known: one row for the path
        ("dgx2", "dgx2 enp1s0f1np1 mtu", "10.12.1.0/24"),  # the stage's row, with its plain fix, wins
    ]
    assert rows[0].get("path") is None  # the caller's rows are not changed


def test_the_table_shows_the_first_differing_line_of_a_file():
    r = drift.row("dgx3", "host_baseline", "/etc/sysctl.d/95-ds41f-recovery.conf",
                  "# header\nkernel.panic = 30\n", "# header\nkernel.panic = 0\n", "write it")
    line = drift.table([r]).splitlines()[2]
    assert "kernel.panic = 30" in line and "kernel.panic = 0" in line and "# header" not in line


def test_rows_carry_their_object_and_a_consequence_folds_into_its_causes_row_by_object():
    """A row's object and cause are data: the fold compares them, whatever the rows' words say."""
    result = {"changed": True, "drift": [
        {"setting": "anything", "expected": "a", "found": "b", "fix": "f",
         "object": {"kind": "nft_table", "name": "inet ds41f"}},
        {"setting": "port 8000 open to the world", "expected": "closed", "found": "open", "fix": "g",
         "object": {"kind": "port", "name": "tcp/8000"}, "cause": {"kind": "nft_table", "name": "inet ds41f"}},
        {"setting": "other", "expected": "x", "found": "y", "fix": "h",
         "object": {"kind": "port", "name": "tcp/9000"},
         "cause": {"kind": "nft_table", "name": "inet ds41f", "node": "dgx3"}}]}
    rows = drift.rows_from_result("dgx1", "firewall", "Audit", result)
    assert rows[0]["object"] == {"node": "dgx1", "kind": "nft_table", "name": "inet ds41f"}
    assert rows[1]["cause"] == {"node": "dgx1", "kind": "nft_table", "name": "inet ds41f"}
    assert rows[2]["cause"]["node"] == "dgx3"
    kept = drift.dedupe(rows)
    # the second row's cause has its own row: folded; the third's cause (on dgx3) has none: it stays
    assert [r["setting"] for r in kept] == ["anything", "other"]


def test_a_row_without_an_object_has_no_object_key():
    assert "object" not in drift.row("dgx1", "s", "x", 1, 2, "f")
