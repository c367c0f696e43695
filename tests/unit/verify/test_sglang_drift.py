"""The doctor's drift rows for an SGLang deployment: the ring4-sglang recipe (seed 001) rendered for every rank of
tp4-ring, each rank's container as `docker inspect` reports what `launch.docker_run(spec)` starts, read by
live_state.container_state and judged by live_checks.evaluate, then made into the doctor's table.

The container records are built from the rendered spec, as the vLLM drift tests build theirs (test_live_checks.py):
the lab has no SGLang build (docs/stages/serve.md, "SGLang in the lab"), so no SGLang container can be recorded.
"""

import copy
import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, launch, live_checks
from ansible_collections.dgxspark.ds41f.plugins.modules import live_state
from tests.unit.serve.conftest import cluster
from tests.unit.serve.sglang_recipe import render_all, sglang_values

KEY = "5d0c9e2a7b1f4e3d8c6a9b0e1f2d3c4b5a697887a6b5c4d3"
IMAGE_ID = "sha256:" + "ab" * 32
IMAGE_ENV = ["PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all"]
IMAGE_ENTRYPOINT = ["python3", "-u", "/opt/dsv41/boot.py"]  # the image's own boot (its Dockerfile)
SERVE_FIX = "ds41f run serve -e '{\"serve_replace\": true}'"
# What SGLang 0.5.23 logs first (entrypoints/engine.py: server_args=..., redacting watermark keys only): the head's
# key from its --config file is in it.
SERVER_ARGS_LINE = ("[2026-12-01 19:02:11] server_args={'model_path': '/models/DeepSeek-V4.1-Flash', 'api_key': '%s', "
                    "'admin_api_key': None, 'tp_size': 4}" % KEY)


@pytest.fixture(scope="module")
def ring():
    c = cluster("tp4-ring")
    return c, {n.name: spec for n, spec in zip(c.nodes, render_all(sglang_values(), c), strict=True)}


def nccl_env(spec):
    """The fabric stage's env file as the rank reads it (--env-file)."""
    return {"NCCL_IB_HCA": spec["env"].get("B12X_ROCE_HCA", ""), "NCCL_IB_GID_INDEX": "3"}


def inspect(spec, running=True):
    """`docker container inspect` of the container that launch.docker_run(spec) starts: its --entrypoint (else the
    image's), the words after the image as Cmd, the image's env, then each --env-file's, then each --env, and each
    --volume."""
    argv = launch.docker_run(spec, api_key_file="/etc/ds41f/serve/api-key.env")
    image = argv.index(spec["image"])
    options, cmd = argv[:image], argv[image + 1:]
    values = {flag: [options[i + 1] for i, word in enumerate(options) if word == flag]
              for flag in ("--entrypoint", "--env-file", "--env", "--volume", "--network", "--ipc", "--restart",
                           "--memory", "--memory-swap", "--cpuset-cpus", "--shm-size", "--cap-add", "--security-opt",
                           "--ulimit", "--device", "--device-cgroup-rule")}
    values["--flags"] = [word for word in options if word.startswith("--") and "=" not in word]
    assert values["--env-file"] == spec["env_files"]  # SGLang's head gets no key env file (its key is a mount)
    env = list(IMAGE_ENV) + ["%s=%s" % kv for path in values["--env-file"] for kv in nccl_env(spec).items()]
    mounts = []
    for volume in values["--volume"]:
        source, target, *options = volume.split(":")
        mode = (options or ["rw"])[0]
        mounts.append({"Type": "bind", "Source": source, "Destination": target, "Mode": mode,
                       "RW": "ro" not in mode.split(",")})
    return {"Id": "c0ffee%d" % spec["rank"], "Image": IMAGE_ID,
            "State": {"Status": "running" if running else "exited", "Running": running,
                      "ExitCode": 0 if running else 137, "OOMKilled": False},
            "Config": {"Image": spec["image"], "Entrypoint": values["--entrypoint"] or IMAGE_ENTRYPOINT, "Cmd": cmd,
                       "Env": env + values["--env"], "Labels": spec["labels"]},
            "Mounts": mounts, "HostConfig": host_config(values)}


def host_config(values):
    """HostConfig as Docker records those `docker run` options (it adds label=disable itself for the host's IPC)."""
    def one(flag, default=None):
        return values[flag][-1] if values[flag] else default

    def ulimit(text):  # name=soft[:hard]: one value is both
        name, _, limits = text.partition("=")
        soft, _, hard = limits.partition(":")
        return {"Name": name, "Soft": int(soft), "Hard": int(hard or soft)}

    ulimits = [ulimit(u) for u in values["--ulimit"]]
    def device(text):  # host[:container[:permissions]], Docker's own rwm when none is given
        parts = text.split(":")
        parts += parts[:1] if len(parts) == 1 else []
        return dict(zip(("PathOnHost", "PathInContainer", "CgroupPermissions"), (parts + ["rwm"])[:3], strict=True))

    devices = [device(d) for d in values["--device"]]
    return {"NetworkMode": one("--network"), "IpcMode": one("--ipc"), "RestartPolicy": {"Name": one("--restart")},
            "Memory": launch.docker_bytes(one("--memory")), "MemorySwap": launch.docker_bytes(one("--memory-swap")),
            "CpusetCpus": one("--cpuset-cpus", ""), "ShmSize": launch.docker_bytes(one("--shm-size")) or 64 << 20,
            "CapAdd": values["--cap-add"] or None, "SecurityOpt": values["--security-opt"] + ["label=disable"],
            "Ulimits": ulimits or None, "Devices": devices, "DeviceCgroupRules": values["--device-cgroup-rule"] or None,
            "CpuShares": 0, "NanoCpus": 0, "PidsLimit": None, "Privileged": "--privileged" in values["--flags"]}


class Node:
    """What live_state asks docker on one node, answered from that node's records."""

    def __init__(self, record, logs=""):
        self.record, self.logs = record, logs

    def get_bin_path(self, name, *a, **k):
        return "/usr/bin/" + name

    def run_command(self, argv, *a, **k):
        if argv[1:3] == ["container", "inspect"]:
            return (0, json.dumps([self.record]), "") if self.record else (1, "", "Error: No such container")
        if argv[1:3] == ["image", "inspect"]:
            return 0, json.dumps([{"Id": IMAGE_ID, "Config": {"Env": IMAGE_ENV, "Entrypoint": IMAGE_ENTRYPOINT}}]), ""
        if argv[1] == "logs":
            return 0, self.logs, ""
        return 1, "", "not recorded: %s" % argv


def doctor(ring, change=None, logs=None, key_file=None):
    """The doctor's rows for the ring: ``change(node, record)`` edits a rank's inspect record first."""
    c, specs = ring
    hosts = {}
    for node in c.nodes:
        spec = specs[node.name]
        record = inspect(spec)
        if change:
            record = change(node.name, record)
        module = Node(record, (logs or {}).get(node.name, ""))
        key = [KEY] if key_file and spec["head"] else []
        state = live_state.container_state(module, spec["name"], sorted(spec["env"]), key)
        links, pings = {}, []
        for link in c.links(node.name):
            links[link["netdev"]] = {"present": True, "operstate": "up", "carrier": True, "mtu": 9000,
                                     "addresses": ["%s/%d" % (link["address"], link["prefix"])]}
            pings.append({"netdev": link["netdev"], "address": link["peer_address"], "ok": True})
        hosts[node.name] = {"live": {"links": links, "pings": pings, "memory": {"available_gib": 40.0},
                                     "container": state, "launch_spec": spec, "image_id": IMAGE_ID,
                                     "env_files": {path: nccl_env(spec) for path in spec["env_files"]}},
                            "node": {}}
    findings = live_checks.evaluate(hosts, c.cable_table(), 9000, 5.0, 3.0, SERVE_FIX, ["VLLM_API_KEY"],
                                    head=c.head.name)
    rows = drift.rows_from_result(c.head.name, "verify", "Compare every node's live state", {"findings": findings})
    return drift.dedupe(rows)


def edit(node_name, fn):
    def change(name, record):
        record = copy.deepcopy(record)
        if name == node_name:
            fn(record)
        return record
    return change


def set_env(name, value):
    def fn(record):
        record["Config"]["Env"] = [("%s=%s" % (name, value) if e.startswith(name + "=") else e)
                                   for e in record["Config"]["Env"]]
    return fn


def only_row(rows):
    assert len(rows) == 1, drift.table(rows)
    return rows[0]


def test_the_ring_renders_sglang_and_matching_containers_give_no_row(ring):
    _, specs = ring
    assert specs["dgx1"]["entrypoint"] == [] and specs["dgx1"]["image_entrypoint"] == IMAGE_ENTRYPOINT
    assert specs["dgx2"]["command"] == ["run"] and specs["dgx2"]["env"]["MEM_FRACTION_STATIC"] == "0.78"
    assert "DSV41_CACHE_WAYS" in specs["dgx2"]["env"]
    assert any(m.endswith(":/run/ds41f/api-key.yaml:ro") for m in specs["dgx1"]["mounts"])  # the head's key file
    assert doctor(ring) == []


@pytest.mark.parametrize("node, name, value, expected", [
    ("dgx2", "MEM_FRACTION_STATIC", "0.85", "0.78"),
    ("dgx1", "CHUNKED_PREFILL_SIZE", "16384", "8192"),
])
def test_a_changed_sglang_setting_is_one_row_naming_it_on_its_rank(ring, node, name, value, expected):
    r = only_row(doctor(ring, edit(node, set_env(name, value))))
    assert (r["node"], r["stage"], r["setting"], r["expected"], r["found"], r["severity"]) == (
        node, "serve", "container env %s" % name, expected, value, "error")
    assert r["fix"].startswith("docker rm -f spark-ds41f on %s" % node) and SERVE_FIX in r["fix"]


def test_a_dropped_and_an_added_flag_of_extra_sglang_args_are_a_row_each(ring):
    _, specs = ring
    extra = specs["dgx4"]["env"]["EXTRA_SGLANG_ARGS"].split()
    extra.remove("--enable-cache-report")
    rows = doctor(ring, edit("dgx4", set_env("EXTRA_SGLANG_ARGS", " ".join(
        extra + ["--watchdog-timeout=60", "--disable-cuda-graph"]))))  # a second use, and a new flag
    setting = "%s (container env EXTRA_SGLANG_ARGS)"
    assert [(r["setting"], r["expected"], r["found"]) for r in rows] == [
        (setting % "--disable-cuda-graph", "(absent)", "(set)"),
        (setting % "--enable-cache-report", "(set)", "(absent)"),
        (setting % "--watchdog-timeout", "1800", "1800; 60")]
    # the terminal table's cells (22 characters each) differ; a whole variable would read alike on both sides
    line = next(x for x in drift.table(rows).splitlines() if "--watchdog-timeout" in x)
    assert [c.strip() for c in line.split(" | ")[4:6]] == ["1800", "1800; 60"]


def test_command_rows_name_each_flag_and_show_the_whole_commands_only_for_an_order():
    spec = ["-m", "sglang.launch_server", "--tp-size", "4", "--enable-cache-report", "--ep-size", "1"]
    assert live_checks.command_rows(spec, list(spec)) == []
    assert live_checks.command_rows(spec, spec[:2] + ["--tp-size=2"] + spec[4:]) == [
        ("--tp-size (container command)", "4", "2")]
    assert live_checks.command_rows(spec, ["-m", "sglang.bench"] + spec[2:]) == [("-m (container command)",
                                                                                   "sglang.launch_server",
                                                                                   "sglang.bench")]
    swapped = spec[:2] + spec[5:] + spec[2:5]
    assert live_checks.command_rows(spec, swapped) == [
        ("flag order or spelling (container command)", " ".join(spec), " ".join(swapped))]


def test_a_changed_and_a_missing_dsv41_variable_are_one_row_each(ring):
    def fn(record):
        env = [e for e in record["Config"]["Env"] if not e.startswith("DSV41_FAST_LOAD=")]
        record["Config"]["Env"] = [("DSV41_CACHE_WAYS=8" if e == "DSV41_CACHE_WAYS=16" else e) for e in env]
    rows = doctor(ring, edit("dgx3", fn))
    assert [(r["node"], r["setting"], r["expected"], r["found"]) for r in rows] == [
        ("dgx3", "container env DSV41_CACHE_WAYS", "16", "8"),
        ("dgx3", "container env DSV41_FAST_LOAD", "1", "(absent)")]
    assert all("docker rm -f spark-ds41f on dgx3" in r["fix"] for r in rows)


def test_a_rocenante_hca_list_other_than_the_topologys_is_a_row(ring):
    _, specs = ring
    wanted = specs["dgx2"]["env"]["B12X_ROCE_HCA"]  # derived from the node's cables (spark_nccl_hcas)
    half = ",".join(wanted.split(",")[:2])

    def fn(record):
        record["Config"]["Env"] = [("B12X_ROCE_HCA=" + half if e.startswith("B12X_ROCE_HCA=") else e)
                                   for e in record["Config"]["Env"]]
    r = only_row(doctor(ring, edit("dgx2", fn)))
    assert (r["node"], r["setting"], r["expected"], r["found"]) == ("dgx2", "container env B12X_ROCE_HCA", wanted, half)


def test_a_wrong_image_is_a_row_on_its_rank(ring):
    def fn(record):
        record["Config"]["Image"] = "dsv41-4x-spark:canary"
    r = only_row(doctor(ring, edit("dgx4", fn)))
    assert (r["node"], r["setting"], r["expected"], r["found"]) == (
        "dgx4", "container image", "dsv41-4x-spark:canary-roce", "dsv41-4x-spark:canary")
    assert "docker rm -f spark-ds41f on dgx4" in r["fix"]


def test_a_stopped_worker_is_one_group_row_not_its_settings(ring):
    def fn(record):
        record["State"].update(Status="exited", Running=False, ExitCode=137)
        record["Config"]["Image"] = "other:tag"  # a stopped rank's settings are not the cause, so not compared
    logs = {"dgx3": "Loading safetensors checkpoint shards: 100%\nKilled\n"}
    r = only_row(doctor(ring, edit("dgx3", fn), logs))
    assert (r["node"], r["setting"], r["expected"]) == (
        "dgx3", "container spark-ds41f (rank of the tensor-parallel group)", "running")
    assert r["found"] == "exited (exit code 137); last log: Loading safetensors checkpoint shards: 100% | Killed"
    assert "disruptive" in r["fix"] and "serve_replace" in r["fix"] and "docker logs spark-ds41f" in r["fix"]


def test_no_secret_reaches_a_row(ring):
    """The head's key file (api-key.yaml) is a mount: rows name its path, never its text. A stopped head's last
    log lines hold SGLang's server_args with the key; a secret-named variable added to a container's env shows
    its name only."""
    def fn(name, record):
        record = copy.deepcopy(record)
        if name == "dgx1":
            record["State"].update(Status="exited", Running=False, ExitCode=1)
        if name == "dgx2":
            record["Config"]["Env"].append("SGLANG_API_KEY=" + KEY)
        return record
    logs = {"dgx1": SERVER_ARGS_LINE + "\nRuntimeError: dist init on 192.168.1.11:20000 timed out\n"}
    for key_file in (True, False):  # with the head's key file read, and without it (the api_key pattern alone)
        rows = doctor(ring, fn, logs, key_file=key_file)
        assert sorted((r["node"], r["setting"]) for r in rows) == [
            ("dgx1", "container spark-ds41f (rank of the tensor-parallel group)"),
            ("dgx2", "container env SGLANG_API_KEY")]
        text = json.dumps(rows) + drift.table(rows) + drift.markdown(rows)
        assert KEY not in text
        head = next(r for r in rows if r["node"] == "dgx1")
        assert "'api_key': '(redacted)'" in head["found"] and "dist init on 192.168.1.11:20000" in head["found"]
        assert next(r for r in rows if r["node"] == "dgx2")["found"] == "(redacted)"
