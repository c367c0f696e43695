"""The serve preflight: every refusal names its cause and fix; consent flags lift only their own refusal."""

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import serve_preflight

from .conftest import cluster
from .test_launch import specs

IMAGE = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def fit_nodes(recipe, shape="tp4-ring", running=None):
    """Readings of a cluster fit to serve; ``running``: the spec each node already runs (or None)."""
    c = cluster(shape)
    out = []
    for node, spec in zip(c.nodes, specs(recipe, shape), strict=True):
        found = None
        if running is not None:
            found = {"running": True, "image_id": IMAGE, "labels": dict(running[node.rank]["labels"])}
        out.append({
            "name": node.name, "rank": node.rank,
            "node": {"page_size": c.shape.page_size},
            "serve": {"docker": {"ok": True, "version": "26.1"}, "image_id": IMAGE, "container": found,
                      "ephemeral_ports": [32768, 60999],
                      "model": {"dir": "/m", "config": True, "verified": True, "info": "/etc/ds41f/model.json"},
                      "env_files_missing": []},
            "spec": spec, "fabric": {"ok": True, "message": ""},
        })
    return c, out


def settings(**extra):
    base = {"replace": False, "allow_reshape": False, "unqualified_shape": False, "master_port": 9999,
            "release": "spark-ds41f-1030", "image": "spark-ds41f:spark-ds41f-1030", "image_id": None}
    base.update(extra)
    return base


def run(c, nodes, **extra):
    return serve_preflight.check(nodes, c.groupvars()["spark_shape"], settings(**extra))


def test_a_fit_cluster_starts(recipe):
    c, nodes = fit_nodes(recipe)
    problems, plan = run(c, nodes)
    assert problems == [] and plan == {"start": True, "replacing": [], "image_ids": {IMAGE: [n["name"] for n in nodes]},
                                       "unchecked": [], "causes": [], "consent_needed": [], "unread": []}


def test_a_lab_container_reads_the_hosts_kernel_so_its_page_size_is_named_unchecked(recipe):
    c, nodes = fit_nodes(recipe)
    for node in nodes:
        node["node"] = {"page_size": 4096, "container": "podman"}
    problems, plan = run(c, nodes)
    assert problems == []
    assert plan["unchecked"][0] == "dgx1: page size (a podman container runs the host's kernel)"
    assert len(plan["unchecked"]) == 4


def test_every_rank_running_its_spec_needs_no_start(recipe):
    c, nodes = fit_nodes(recipe)
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    problems, plan = run(c, nodes)
    assert problems == [] and plan["start"] is False


@pytest.mark.parametrize("breakage, cause", [
    (lambda n: n[2]["node"].update(page_size=4096), "dgx3: the running kernel's page size is 4096 bytes, but tp4-ring "
                                                    "needs 65536. Fix: run the kernel stage"),
    (lambda n: n[1].update(fabric={"ok": False, "message": "dgx2 enp1s0f1np1 no carrier"}),
     "dgx2: the fabric check fails (dgx2 enp1s0f1np1 no carrier). Fix: run the fabric stage"),
    (lambda n: n[3]["serve"].update(image_id=OTHER), "has different IDs across nodes"),
    (lambda n: n[3]["serve"].update(image_id=None), "dgx4 does not hold the image spark-ds41f:spark-ds41f-1030. "
                                                    "Fix: run the image stage"),
    (lambda n: n[0]["serve"]["model"].update(verified=False, info_path=None),
     "dgx1: the model at /m is not verified (/etc/ds41f/model.json names no verified checkpoint). Fix: run the "
     "model stage"),
    (lambda n: n[0]["serve"].update(ephemeral_ports=[9000, 60999]),
     "serve_master_port 9999 lies inside dgx1's ephemeral port range 9000-60999"),
    (lambda n: n[1]["serve"].update(env_files_missing=["/etc/ds41f/nccl.env"]),
     "dgx2: the env file /etc/ds41f/nccl.env is missing. Fix: run the fabric stage"),
    (lambda n: n[2]["serve"].update(docker={"ok": False, "version": "Cannot connect"}), "dgx3: docker does not answer"),
])
def test_each_refusal_names_its_cause(recipe, breakage, cause):
    c, nodes = fit_nodes(recipe)
    breakage(nodes)
    problems, plan = run(c, nodes)
    assert len(problems) == 1 and cause in problems[0], problems
    # The doctor's row for it: the node (or all) and the thing, found unlike expected, the sentence's own fix.
    [row] = plan["causes"]
    assert row["node"] in problems[0] or row["node"] == "all"
    assert row["found"] != row["expected"] and row["fix"] and "Fix:" not in row["fix"]
    assert row["fix"] in problems[0]


def test_unqualified_shape_needs_consent(recipe):
    c, nodes = fit_nodes(recipe, "tp3-triangle-4k")
    problems, _ = run(c, nodes)
    assert problems == ["tp3-triangle-4k is not qualified for release spark-ds41f-1030 (no release benchmark names "
                        "it). Fix: re-run with -e '{\"serve_unqualified_shape\": true}' to start it anyway."]
    assert run(c, nodes, unqualified_shape=True)[0] == []


def test_replacing_a_running_engine_needs_consent(recipe):
    old = dict(recipe, ds41f_release="spark-ds41f-1025")
    c, nodes = fit_nodes(old)
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    problems, plan = run(c, nodes)
    assert plan["start"] and plan["replacing"] == ["dgx1", "dgx2", "dgx3", "dgx4"]
    assert len(problems) == 4 and "dgx1 already runs spark-ds41f (release spark-ds41f-1025" in problems[0]
    # the consent as a sysadmin can type it: -e key=value would be the string 'true', which validation refuses
    assert "Fix: re-run with -e '{\"serve_replace\": true}'" in problems[0]
    # What a start would replace is no cause: the doctor lists it as not checked, never as a row.
    assert plan["causes"] == [] and plan["consent_needed"] == problems
    assert run(c, nodes, replace=True)[0] == []


def test_a_retagged_image_is_a_new_engine(recipe):
    c, nodes = fit_nodes(recipe)
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    for node in nodes:
        node["serve"]["image_id"] = OTHER  # the tag now names another image than the one running
    problems, plan = run(c, nodes)
    assert plan["start"] and "image aaaaaaaaaaaa); this start is release spark-ds41f-1030 (image bbbbbbbbbbbb)" in \
        problems[0]


def test_another_shape_needs_reshape_consent_even_with_replace(recipe):
    c, nodes = fit_nodes(dict(recipe, serve_kv_cache_bytes=1 << 30))  # the running engine had another KV pool
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    problems, _ = run(c, nodes, replace=True)
    assert len(problems) == 4 and "runs an engine of another shape" in problems[0]
    assert "Fix: re-run with -e '{\"serve_allow_reshape\": true}'" in problems[0]
    assert run(c, nodes, replace=True, allow_reshape=True)[0] == []


def test_a_rollback_pins_the_image_id(recipe):
    c, nodes = fit_nodes(recipe)
    c, nodes = fit_nodes(recipe, running=[n["spec"] for n in nodes])
    problems, plan = run(c, nodes, image_id=OTHER, replace=True)
    assert problems == [] and plan["start"]


def test_a_missing_env_file_is_one_row_the_fabric_stage_s_which_writes_it(recipe):
    """/etc/ds41f/nccl.env deleted on dgx2 (the mutation test's trial): the fabric stage, which writes it, names it,
    and this preflight, which passes it to the container, names it by the same path. The doctor keeps one row, the
    fabric stage's (its fix writes the file); the serve stage run alone still has its own."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift

    c, nodes = fit_nodes(recipe)
    nodes[1]["serve"]["env_files_missing"] = ["/etc/ds41f/nccl.env"]
    _, plan = run(c, nodes)
    [cause] = plan["causes"]
    preflight = drift.row(cause["node"], "serve", cause["setting"], cause["expected"], cause["found"], cause["fix"])
    written = drift.row("dgx2", "fabric", "/etc/ds41f/nccl.env", "present", "absent", "write /etc/ds41f/nccl.env")
    assert drift.dedupe([written, preflight]) == [written]
    assert drift.dedupe([preflight]) == [preflight]


def test_a_node_whose_read_failed_is_judged_on_nothing_an_older_run_left(recipe):
    """Docker down on dgx1: its serve facts are the fact cache's, from an older run (another image ID there).
    Nothing of it is compared, no row is the preflight's (the read's failure is that node's row), and the start
    is refused with the reason, listed as not checked."""
    c, nodes = fit_nodes(recipe, running=specs(recipe, "tp4-ring"))
    nodes[0]["serve"]["image_id"] = OTHER  # stale
    nodes[0]["unread"] = "docker is not running on dgx1 (enabled, inactive)"
    problems, plan = run(c, nodes)
    assert plan["causes"] == [] and plan["unread"] == ["dgx1"] and plan["start"]
    assert problems == ["dgx1: its serving state was not read (docker is not running on dgx1 (enabled, inactive)). "
                        "Fix: fix what that node's row names, then run the serve stage again."]
    assert plan["image_ids"] == {IMAGE: ["dgx2", "dgx3", "dgx4"]}
    assert plan["unchecked"] == ["dgx1: its serving state (not read: docker is not running on dgx1 (enabled, "
                                 "inactive))"]


def test_its_verdicts_on_other_stages_fold_by_the_data_they_carry_never_by_their_words(recipe):
    """A failed fabric check on dgx2, an unverified checkpoint on dgx3 and two image IDs: each preflight cause says
    which rows it restates (echo_of), so the doctor folds it where those rows are in the table, and keeps it where
    none is, whatever its words say."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift

    c, nodes = fit_nodes(recipe)
    nodes[1]["fabric"] = {"ok": False, "message": "no 9000-byte reply"}
    nodes[2]["serve"]["model"] = dict(nodes[2]["serve"]["model"], verified=False)
    nodes[3]["serve"]["image_id"] = OTHER
    _, plan = run(c, nodes)
    causes = drift.rows_from_result("dgx1", "serve", "Preflight", {"drift": plan["causes"]})
    assert {(r["node"], json.dumps(r.get("echo_of"), sort_keys=True)) for r in causes} == {
        ("dgx2", '{"path": true}'), ("dgx3", '{"node": "dgx3", "stage": "model"}'),
        ("all", '{"on_a_node": true, "stage": "image"}')}
    alone = drift.dedupe(causes)
    assert len(alone) == 3  # nothing they restate is in the table: each is the only evidence of its cause
    theirs = [drift.row("dgx2", "fabric", "enp1s0f0np0 mtu", 9000, 1500, "ip link set", path="10.23.1.0/24"),
              drift.row("dgx3", "model", "/etc/ds41f/model.json", "present", "absent", "ds41f run model"),
              drift.row("dgx4", "image", "image spark-ds41f:spark-ds41f-1030", IMAGE, OTHER, "ds41f run image")]
    assert drift.dedupe(causes + theirs) == drift.dedupe(theirs)
    reworded = [dict(r, setting="anything at all %d" % i) for i, r in enumerate(causes)]
    assert drift.dedupe(reworded + theirs) == drift.dedupe(theirs)
    # the same words without the data are a cause of their own
    assert len(drift.dedupe([{k: v for k, v in r.items() if k != "echo_of"} for r in causes] + theirs)) == 6
