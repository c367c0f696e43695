"""The checkpoint scrub on a real checkpoint folder (tests/checkpoint.py): every file's bytes changed in turn under a
kept size and mtime (the fault the model stage's quick check cannot see), missing, resized and unreadable files, the
program the stage installs run as the timer and the doctor run it, and what the model stage's check makes of its
state."""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, scrub, textfile
from ansible_collections.dgxspark.ds41f.plugins.module_utils import manifest as mf

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import checkpoint  # noqa: E402  (tests/checkpoint.py)

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "model"
WEEK = 604800


@pytest.fixture
def ckpt(tmp_path):
    """A checkpoint verified as the model stage leaves it: its manifest and the node's record."""
    root = str(checkpoint.write(tmp_path / "ckpt", shards=3, shard_mib=1, seed=5))
    made, _ = mf.make(root, "r", "0123456", 2)
    record = mf.record_of(made, mf.check(root, made)["ok"])
    return root, made, record


def flip_keeping_stat(path, offset=None):
    """Change one byte in place and put the mtime back: size, mtime and inode stay, the bytes do not."""
    before = os.stat(path)
    offset = before.st_size // 2 if offset is None else offset
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert scrub.stat_of(path) == {"size": before.st_size, "mtime_ns": before.st_mtime_ns, "ino": before.st_ino}


def test_a_clean_checkpoint_scrubs_clean(ckpt):
    root, made, record = ckpt
    state = scrub.scrub(root, made, record)
    assert state["complete"] and state["bad"] == [] and state["reason"] is None
    assert state["checked"] == state["files"] == len(made["files"]) and state["bytes"] == made["total_bytes"]
    assert state["manifest_digest"] == made["digest"] and state["path"] == root
    assert scrub.unchecked(state, root, made["digest"], state["finished"], WEEK) is None


def test_every_file_changed_under_its_kept_stat_is_found_by_the_scrub_alone(ckpt):
    """Each file of the checkpoint in turn: the quick check (the record vouches for the stat) passes it, the scrub
    names exactly that file, and the stage's check reading the scrub's state names it as a problem to fetch."""
    root, made, record = ckpt
    for entry in made["files"]:
        path = os.path.join(root, entry["path"])
        flip_keeping_stat(path)
        assert mf.check(root, made, record)["problems"] == []  # the held-back fault: invisible to the quick check
        state = scrub.scrub(root, made, record)
        assert [(b["path"], b["problem"], b["kept_stat"]) for b in state["bad"]] == [(entry["path"], "corrupt", True)]
        assert scrub.describe(state["bad"][0]).startswith(scrub.KEPT_STAT)
        suspects = scrub.suspects(state, root, made["digest"])
        checked = mf.check(root, made, record, suspects=suspects)
        assert [(p["path"], p["problem"]) for p in checked["problems"]] == [(entry["path"], mf.CORRUPT)]
        assert "bytes changed under kept size and mtime" in mf.describe(checked["problems"][0])
        assert checked["hashed"] == []  # the check itself read nothing
        flip_keeping_stat(path)  # back as it was, for the next file's turn
        assert scrub.scrub(root, made, record)["bad"] == []


def test_a_file_rewritten_since_it_was_verified_is_not_called_a_kept_stat(ckpt):
    root, made, record = ckpt
    config = os.path.join(root, "config.json")
    Path(config).write_text(Path(config).read_text().replace("random", "Random"))
    os.utime(config, ns=(1, 1))
    state = scrub.scrub(root, made, record)
    assert [(b["path"], b["kept_stat"]) for b in state["bad"]] == [("config.json", False)]
    assert "rewritten since it was verified" in scrub.describe(state["bad"][0])


def test_missing_and_resized_files_are_named_and_the_check_names_them_itself(ckpt):
    root, made, record = ckpt
    gone, cut = made["files"][0]["path"], made["files"][1]["path"]
    os.unlink(os.path.join(root, gone))
    with open(os.path.join(root, cut), "r+b") as handle:
        handle.truncate(100)
    state = scrub.scrub(root, made, record)
    assert {b["path"]: b["problem"] for b in state["bad"]} == {gone: scrub.MISSING, cut: scrub.SIZE}
    assert state["complete"] and state["checked"] == len(made["files"])
    assert scrub.suspects(state, root, made["digest"]) == {}  # the check's own stat finds these
    problems = {p["path"]: p["problem"] for p in mf.check(root, made, record)["problems"]}
    assert problems == {gone: mf.MISSING, cut: mf.SHORT}


def test_a_file_the_stage_replaced_is_no_longer_the_scrub_s_finding(ckpt):
    root, made, record = ckpt
    path = os.path.join(root, made["files"][-1]["path"])
    original = Path(path).read_bytes()
    flip_keeping_stat(path)
    state = scrub.scrub(root, made, record)
    assert list(scrub.suspects(state, root, made["digest"])) == [made["files"][-1]["path"]]
    Path(path + mf.PART_SUFFIX).write_bytes(original)  # as model_fetch lands a file: a new inode under the name
    os.replace(path + mf.PART_SUFFIX, path)
    assert scrub.suspects(state, root, made["digest"]) == {}
    assert scrub.suspects(state, root, "another digest") == {} and scrub.suspects(state, "/elsewhere", made["digest"]) \
        == {}


def test_a_scrub_out_of_time_records_how_far_it_got(ckpt):
    root, made, record = ckpt
    calls = []
    state = scrub.scrub(root, made, record, stop=lambda: calls.append(1) or len(calls) > 4, budget_s=30)
    assert not state["complete"] and 0 < state["checked"] < len(made["files"])
    assert re.fullmatch(r"stopped after \d of 5 files \(0\.0 GiB read\): the time budget of 30 s ran out",
                        state["reason"])
    reason = scrub.unchecked(state, root, made["digest"], state["finished"], WEEK)
    assert reason.startswith("the last scrub (") and "did not finish: stopped after" in reason


@pytest.mark.parametrize("state, now, says", [
    (None, 0, "never ran on this node (its timer runs it every 1w; ds41f doctor --deep runs it now)"),
    ({"unusable": "/x cannot be read (bad)"}, 0, "/x cannot be read (bad)"),
    ({"path": "/other", "finished": 0, "complete": True}, 0, "read another checkpoint or manifest"),
    ({"finished": 0, "complete": False, "reason": "no readable manifest"}, 0, "did not finish: no readable manifest"),
    ({"finished": 0, "complete": True}, 2 * WEEK + 1, "more than two periods (1w each)"),
    ({"finished": 0, "complete": True}, 2 * WEEK, None),
])
def test_a_scrub_that_is_no_check_now_says_why(ckpt, state, now, says):
    root, made, _ = ckpt
    if state is not None and "unusable" not in state:
        state = dict({"path": root, "manifest_digest": made["digest"]}, **state)
    reason = scrub.unchecked(state, root, made["digest"], now, WEEK)
    assert reason == says if says is None or says.startswith("never") else says in reason


@pytest.mark.parametrize("started, digest, due", [(None, "d", True), (0, "d", False), (-WEEK, "d", True),
                                                  (0, "another", True)])
def test_the_timer_s_run_scrubs_only_when_a_period_passed_or_the_checkpoint_changed(started, digest, due):
    state = None if started is None else {"path": "/m", "manifest_digest": "d", "started": started, "complete": True}
    assert scrub.due(state, digest, "/m", 10, WEEK) is due


def test_the_period_reads_back_in_its_largest_unit():
    assert [scrub.span_text(s) for s in (WEEK, 3 * 86400, 7200, 5400, 90)] == ["1w", "3d", "2h", "90min", "90s"]


def test_the_metric_counts_every_problem_and_parses(ckpt):
    root, made, record = ckpt
    os.unlink(os.path.join(root, made["files"][0]["path"]))
    flip_keeping_stat(os.path.join(root, made["files"][1]["path"]))
    state = scrub.scrub(root, made, record)
    families = {f.name: f for f in text_string_to_metric_families(
        textfile.render(textfile.model_scrub_metrics(state)))}
    bad = {s.labels["problem"]: s.value for s in families["ds41f_model_scrub_files_bad"].samples}
    assert bad == {"corrupt": 1.0, "unreadable": 0.0, "missing": 1.0, "size": 0.0}
    assert set(bad) == set(scrub.PROBLEMS)
    assert families["ds41f_model_scrub_files_checked"].samples[0].value == len(made["files"])
    assert families["ds41f_model_scrub_last_run_timestamp_seconds"].samples[0].value == state["finished"]
    assert families["ds41f_model_scrub_complete"].samples[0].value == 1.0


# -- the program the stage installs, as the timer and the doctor run it -------------------------------------------


def installed_layout():
    """{file name in the scrub's folder: its source in this repository}, read from the role's list of what it installs
    (vars/main.yml _model_scrub_files), so the test runs what the stage puts on a node."""
    files = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_model_scrub_files"]
    out = {}
    for item in files:
        found = re.search(r"lookup\('ansible\.builtin\.file', (?:role_path ~ '/\.\./\.\./)?'?([^']+)'", item.get(
            "content", ""))
        if found:
            source = found.group(1)
            out[os.path.basename(item["path"].replace("{{ _model_scrub_program }}", "ds41f-model-scrub.py"))] = (
                ROOT / source if "/" in source else ROLE / "files" / source)
    return out


def test_the_stage_installs_the_program_with_every_module_it_imports():
    layout = installed_layout()
    program = layout["ds41f-model-scrub.py"].read_text()
    beside = set(re.findall(r"^import (ds41f_\w+)", program, re.M))
    assert beside == {name[:-3] for name in layout if name.startswith("ds41f_")} == {
        "ds41f_manifest", "ds41f_scrub", "ds41f_textfile"}
    for name, source in layout.items():  # what travels alone imports nothing of the collection
        if name.startswith("ds41f_"):
            assert "ansible_collections" not in source.read_text(), name


@pytest.fixture
def node(tmp_path_factory):
    """A node's files in a folder an unprivileged user can reach (pytest's own is root's alone): the program and its
    helpers as the stage lays them out, the checkpoint, its manifest and record, a state folder, a textfile folder."""
    base = Path(tempfile.mkdtemp(prefix="ds41f-scrub-"))
    base.chmod(0o755)
    try:
        lib = base / "lib"
        lib.mkdir()
        for name, source in installed_layout().items():
            shutil.copyfile(source, lib / name)
        root = str(checkpoint.write(base / "ckpt", shards=3, shard_mib=1, seed=9))
        made, _ = mf.make(root, "r", "0123456", 2)
        mf.write_atomic(root + ".manifest.json", mf.dump_json(made))
        mf.write_atomic(root + ".verified.json", mf.dump_json(mf.record_of(made, mf.check(root, made)["ok"])))
        for folder in ("var", "prom"):
            (base / folder).mkdir(mode=0o777)
            (base / folder).chmod(0o777)
        # The state's own folder is not there before the first scrub, as on a node the stage just set up.
        config = {"path": root, "manifest": root + ".manifest.json", "manifest_digest": made["digest"],
                  "record": root + ".verified.json", "state_file": str(base / "var" / "model" / "scrub.json"),
                  "textfile_dir": str(base / "prom"), "period_s": WEEK, "timeout_s": 600}
        (base / "scrub.json").write_text(json.dumps(config))
        os.chmod(root + ".manifest.json", 0o644)
        os.chmod(root + ".verified.json", 0o644)
        yield {"base": base, "root": root, "made": made, "config": config, "program": lib / "ds41f-model-scrub.py"}
    finally:
        shutil.rmtree(base)


# The nodes' interpreter, which the unit names (an unprivileged user cannot reach this project's venv under /root).
NODE_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def run_program(node, *args, user=None):
    done = subprocess.run([NODE_PYTHON, str(node["program"]), str(node["base"] / "scrub.json"), *args],
                          capture_output=True, text=True, timeout=120, user=user, env={"PATH": os.environ["PATH"]})
    return done.returncode, done.stdout + done.stderr


def test_the_timer_s_run_scrubs_once_per_period_and_a_run_for_now_always(node):
    rc, out = run_program(node, "--due")
    assert rc == 0 and "nothing bad" in out, out
    first = scrub.load(node["config"]["state_file"])
    assert first["complete"] and first["checked"] == len(node["made"]["files"])
    rc, out = run_program(node, "--due")
    assert rc == 0 and "not due: the last scrub started %s" % scrub.stamp(first["started"]) in out
    assert scrub.load(node["config"]["state_file"]) == first
    flip_keeping_stat(os.path.join(node["root"], node["made"]["files"][2]["path"]))
    rc, out = run_program(node, "--budget", "300")
    assert rc == 0 and "BAD %s: %s" % (node["made"]["files"][2]["path"], scrub.KEPT_STAT) in out
    second = scrub.load(node["config"]["state_file"])
    assert second["started"] > first["started"] and [b["path"] for b in second["bad"]] == [
        node["made"]["files"][2]["path"]]
    prom = (node["base"] / "prom" / "ds41f_model_scrub.prom").read_text()
    assert 'ds41f_model_scrub_files_bad{problem="corrupt"} 1.0' in prom


def test_one_scrub_at_a_time_the_timer_s_leaves_and_a_run_for_now_takes_the_running_one_s_result(node):
    import fcntl
    import threading

    os.makedirs(os.path.dirname(node["config"]["state_file"]))
    held = open(node["config"]["state_file"] + ".lock", "a")  # noqa: SIM115  (the running scrub's lock, until finish)
    fcntl.flock(held, fcntl.LOCK_EX)
    rc, out = run_program(node, "--due")
    assert rc == 0 and "another scrub is running; nothing to do" in out
    rc, out = run_program(node, "--budget", "4")  # waits half its budget, then gives up
    assert rc == 0 and "another scrub is running past half this run's budget" in out
    assert scrub.load(node["config"]["state_file"]) is None

    def finish():  # the running scrub ends: its result, then its lock
        time.sleep(1)
        scrub.write(node["config"]["state_file"], scrub.scrub(node["root"], node["made"]))
        fcntl.flock(held, fcntl.LOCK_UN)

    ender = threading.Thread(target=finish)
    ender.start()
    rc, out = run_program(node, "--budget", "60")
    ender.join()
    held.close()
    assert rc == 0 and "the scrub that was running finished: 5 of 5 files" in out


def test_a_scrub_without_its_manifest_records_why_and_fails(node):
    os.unlink(node["config"]["manifest"])
    rc, out = run_program(node)
    assert rc == 1 and "cannot scrub: no readable manifest at %s" % node["config"]["manifest"] in out
    state = scrub.load(node["config"]["state_file"])
    assert not state["complete"] and state["checked"] == 0
    assert "did not finish: no readable manifest" in scrub.unchecked(
        state, node["root"], node["made"]["digest"], time.time(), WEEK)


def test_a_manifest_that_is_not_the_installed_one_is_no_reference(node):
    data = json.loads(Path(node["config"]["manifest"]).read_text())
    data["files"][0]["sha256"] = "0" * 64
    data["digest"] = mf.digest(data)
    Path(node["config"]["manifest"]).write_text(json.dumps(data))
    rc, out = run_program(node)
    assert rc == 1 and "is not the one the model stage installed" in out


def test_an_unreadable_file_is_named_by_the_scrub_and_by_the_stage_s_check(node):
    """A file the scrub cannot read: chmod 000 and the scrub run as an unprivileged user (root reads any file)."""
    victim = node["made"]["files"][1]["path"]
    os.chmod(os.path.join(node["root"], victim), 0)
    user = "nobody" if os.geteuid() == 0 else None
    rc, out = run_program(node, user=user)
    assert rc == 0 and "BAD %s: unreadable (Permission denied)" % victim in out, out
    state = scrub.load(node["config"]["state_file"])
    assert [(b["path"], b["problem"]) for b in state["bad"]] == [(victim, scrub.UNREADABLE)]
    assert state["complete"] and state["checked"] == len(node["made"]["files"])
    if user:
        assert pwd.getpwuid(os.stat(node["config"]["state_file"]).st_uid).pw_name == user
    got = run_module("model_check", {"path": node["root"], "manifest": node["made"],
                                     "record_path": node["root"] + ".verified.json",
                                     "scrub_state": node["config"]["state_file"], "scrub_period_s": WEEK})
    assert not got["complete"] and [(p["path"], p["problem"]) for p in got["problems"]] == [(victim, mf.UNREADABLE)]
    assert got["drift"][0]["found"].startswith("%s: unreadable (Permission denied), in the scrub of " % victim)


def test_the_check_names_a_file_it_cannot_read_itself_without_failing(node):
    """model_check alone, run as an unprivileged user over a file it cannot read and no record vouching for it."""
    victim = node["made"]["files"][0]["path"]
    os.chmod(os.path.join(node["root"], victim), 0)
    user = "nobody" if os.geteuid() == 0 else None
    got = run_module("model_check", {"path": node["root"], "manifest": node["made"],
                                     "record_path": str(node["base"] / "var" / "none.json")}, user=user)
    assert not got.get("failed") and [(p["path"], p["problem"]) for p in got["problems"]] == [(victim, mf.UNREADABLE)]
    assert got["messages"] == ["%s is unreadable (Permission denied)" % victim]


# -- what the model stage's check and the doctor make of it -------------------------------------------------------


def run_module(name, args, check_mode=True, user=None):
    """A module as Ansible runs it on a node: a Python process fed its arguments (as another user, the nodes'
    interpreter with ansible-core's module_utils from this venv)."""
    import ansible

    path = [str(ROOT / "collections")] + ([os.path.dirname(os.path.dirname(ansible.__file__))] if user else [])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}, handle)
    os.chmod(handle.name, 0o644)
    try:
        done = subprocess.run([NODE_PYTHON if user else sys.executable, str(ROOT / "plugins" / "modules" / (
            name + ".py")), handle.name], capture_output=True, text=True, timeout=120, user=user,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(path)})
    finally:
        os.unlink(handle.name)
    return json.loads(done.stdout)


def test_the_doctor_row_names_the_file_with_its_object_cause_and_fix(ckpt, tmp_path):
    root, made, record = ckpt
    mf.write_atomic(str(tmp_path / "rec.json"), mf.dump_json(record))
    victim = made["files"][2]["path"]
    flip_keeping_stat(os.path.join(root, victim))
    state_file = str(tmp_path / "scrub.json")
    args = {"path": root, "manifest": made, "record_path": str(tmp_path / "rec.json"), "scrub_state": state_file,
            "scrub_period_s": WEEK}
    before = run_module("model_check", args)
    assert before["complete"] and before["drift"] == []  # without a scrub: nothing to see, and it says so
    assert before["skipped_checks"] == [{"check": scrub.CHECK, "reason": scrub.unchecked(
        None, root, made["digest"], 0, WEEK)}]
    scrub.write(state_file, scrub.scrub(root, made, record))
    got = run_module("model_check", args)
    assert got["skipped_checks"] == [] and got["scrub"]["bad"] == 1 and got["scrub"]["complete"]
    rows = drift.rows_from_result("dgx3", "model", "Check this node's copy against the manifest", got)
    assert len(rows) == 1
    row = rows[0]
    assert row["object"] == {"node": "dgx3", "kind": "checkpoint file", "name": os.path.join(root, victim)}
    assert row["fix"] == "ds41f run model" and row["action"] == "fetch %s again from a node that holds it" % victim
    assert row["found"].startswith("%s: bytes changed under kept size and mtime (sha256 " % victim)
    assert row["expected"] == "sha256 %s, %d bytes" % (made["files"][2]["sha256"][:16], made["files"][2]["size"])


def test_the_model_stage_fetches_the_file_again_and_the_finding_is_gone(ckpt, tmp_path):
    """The repair, for real over loopback: the source's share, this node's check with the scrub's state, model_fetch
    outside check mode; then the copy is whole and the check (reading the same state) is clean."""
    from .test_model_transfer import TOKEN, share_of, start

    source, made, _ = ckpt
    root = str(tmp_path / "node")
    shutil.copytree(source, root)
    record_path, state_file = str(tmp_path / "rec.json"), str(tmp_path / "scrub.json")
    mf.write_atomic(record_path, mf.dump_json(mf.record_of(made, mf.check(root, made)["ok"])))
    victim = made["files"][0]["path"]
    flip_keeping_stat(os.path.join(root, victim))
    scrub.write(state_file, scrub.scrub(root, made, mf.load_json(record_path)))
    check_args = {"path": root, "manifest": made, "record_path": record_path, "scrub_state": state_file,
                  "scrub_period_s": WEEK}
    check = run_module("model_check", check_args)
    assert [p["path"] for p in check["problems"]] == [victim]
    port, thread, _ = start(share_of(source, made))
    fetched = run_module("model_fetch", {
        "path": root, "manifest": made, "manifest_path": str(tmp_path / "m.json"), "record_path": record_path,
        "check": check, "parent": {"name": "parent", "addresses": [], "management_address": "127.0.0.1"},
        "node": "child", "port": port, "token": TOKEN}, check_mode=False)
    thread.join(10)
    assert fetched["fetched"] == [victim] and fetched["drift"][0]["object"] == {
        "kind": "checkpoint file", "name": os.path.join(root, victim)}, fetched
    assert mf.sha256_file(os.path.join(root, victim)) == made["files"][0]["sha256"]
    after = run_module("model_check", check_args)
    assert after["complete"] and after["problems"] == [] and after["hashed"] == 0


def test_the_scrub_module_runs_nothing_in_check_mode_or_where_nothing_is_installed(node):
    args = {"program": str(node["program"]), "config": str(node["base"] / "scrub.json"), "budget": 60}
    got = run_module("model_scrub", args)
    assert got["skipped_checks"][0]["reason"].startswith("a run in check mode starts no scrub")
    assert scrub.load(node["config"]["state_file"]) is None
    got = run_module("model_scrub", dict(args, program=str(node["base"] / "nothing.py")), check_mode=False)
    assert got["scrub"] is None and "the scrub is not installed on this node (no %s)" % (
        node["base"] / "nothing.py") in got["progress"]


# The play is named as the stage whose check it runs (the callback names a task outside a role by its play).
DEEP = """- name: model
  hosts: all
  gather_facts: false
  tasks:
    - name: The checkpoint scrub, now
      ansible.builtin.include_role:
        name: dgxspark.ds41f.model
        tasks_from: scrub_now.yml
    - name: Check this node's copy against the manifest
      dgxspark.ds41f.node_steps:
        steps:
          - module: model_check
            args:
              path: "{{ node_root }}"
              manifest: "{{ lookup('ansible.builtin.file', node_root ~ '.manifest.json') | from_json }}"
              record_path: "{{ node_root }}.verified.json"
              scrub_state: "{{ node_state }}"
              scrub_period_s: 604800
"""


def test_doctor_deep_scrubs_every_node_prints_each_and_the_check_names_the_file(node, tmp_path):
    """A real ansible-playbook in check mode with the doctor's callback, on two local nodes that share one checkpoint
    and one state file: the role's scrub_now.yml, then model_check."""
    victim = node["made"]["files"][3]["path"]
    flip_keeping_stat(os.path.join(node["root"], victim))
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n%s" % "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (n, sys.executable)
        for n in ("dgx1", "dgx2")))
    (tmp_path / "p.yml").write_text(DEEP)
    extra = {"_model_scrub_program": str(node["program"]), "_model_scrub_config": str(node["base"] / "scrub.json"),
             "node_root": node["root"], "node_state": node["config"]["state_file"]}
    report = tmp_path / "report"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"),
               ANSIBLE_STDOUT_CALLBACK="dgxspark.ds41f.drift_report",
               ANSIBLE_CALLBACKS_ENABLED="dgxspark.ds41f.drift_report", DS41F_REPORT_DIR=str(report),
               ANSIBLE_TASK_TIMEOUT="120")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "hosts.yml",
                           "p.yml", "--check", "-e", json.dumps(extra)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = scrub.load(node["config"]["state_file"])
    for host in ("dgx1", "dgx2"):
        assert "  %s: %s" % (host, scrub.summary(state)) in proc.stdout, proc.stdout
    assert "5 of 5 files" in scrub.summary(state) and "1 bad: %s %s" % (victim, scrub.KEPT_STAT) in scrub.summary(
        state)
    doc = json.loads((report / "doctor.json").read_text())
    # no verdict task here: the rows as the nodes finished, unfolded
    assert sorted(((r["node"], r["object"]) for r in doc["rows"]), key=str) == [
        (host, {"node": host, "kind": "checkpoint file", "name": os.path.join(node["root"], victim)})
        for host in ("dgx1", "dgx2")]
    assert {r["fix"] for r in doc["rows"]} == {"ds41f run model"} and doc["not_checked"] == []
