"""The container runtime is part of the baseline: the host baseline enables and starts Docker, and the image and
serve stages ask whether it answers before any Docker call (docker_daemon), failing with the node and the fix.
The ping runs against real unix sockets here; the unit states are systemctl's words."""

import socket
import threading

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_daemon, drift
from ansible_collections.dgxspark.ds41f.plugins.modules import docker_daemon as docker_daemon_module
from ansible_collections.dgxspark.ds41f.plugins.modules import unit_policy
from tests.conftest import ROOT
from tests.unit.host.test_host_baseline import FakeModule


def serve_once(path, reply):
    """A unix socket at ``path`` that answers one request with ``reply`` (None: accepts and says nothing)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def answer():
        conn, _ = server.accept()
        conn.recv(256)
        if reply is not None:
            conn.sendall(reply)
            conn.close()
        else:
            threading.Event().wait(3)
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    return server


def test_an_engine_that_answers_its_ping(tmp_path):
    server = serve_once(tmp_path / "docker.sock", b"HTTP/1.1 200 OK\r\nApi-Version: 1.43\r\n\r\nOK")
    try:
        assert docker_daemon.ping(str(tmp_path / "docker.sock"), 2) == (True, "")
    finally:
        server.close()


def test_a_stopped_engine_a_dead_socket_and_a_wedged_one_are_each_named(tmp_path):
    answered, seen = docker_daemon.ping(str(tmp_path / "absent.sock"), 1)
    assert not answered and seen.endswith("No such file or directory")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(tmp_path / "dead.sock"))  # the file is there, nothing listens: docker stopped, socket left
    dead.close()
    answered, seen = docker_daemon.ping(str(tmp_path / "dead.sock"), 1)
    assert not answered and seen.endswith("Connection refused")
    server = serve_once(tmp_path / "wedged.sock", None)
    try:
        assert docker_daemon.ping(str(tmp_path / "wedged.sock"), 0.5) == (
            False, "no answer on %s in 0.5 s" % (tmp_path / "wedged.sock"))
    finally:
        server.close()


def test_an_image_read_names_what_the_tag_or_id_holds_and_nothing_for_an_absent_one(tmp_path):
    """One read of the engine per name (the image stage's tag, then the ID): the three fields the stage reads."""
    body = (b'{"Id": "sha256:aa", "RepoTags": ["ds41f-lab:lab-1"], "Size": 1, '
            b'"Config": {"Labels": {"ds41f.input-hash": "h1"}, "Env": ["A=1"]}}')
    server = serve_once(tmp_path / "found.sock", b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)
    try:
        assert docker_daemon.image(str(tmp_path / "found.sock"), "ds41f-lab:lab-1", 2) == {
            "Id": "sha256:aa", "RepoTags": ["ds41f-lab:lab-1"], "Config": {"Labels": {"ds41f.input-hash": "h1"}}}
    finally:
        server.close()
    server = serve_once(tmp_path / "absent.sock", b'HTTP/1.0 404 Not Found\r\n\r\n{"message": "No such image"}')
    try:
        assert docker_daemon.image(str(tmp_path / "absent.sock"), "sha256:bb", 2) is None
    finally:
        server.close()
    server = serve_once(tmp_path / "broken.sock", b'HTTP/1.0 500 Internal Server Error\r\n\r\n{"message": "boom"}')
    try:
        with pytest.raises(OSError, match="answered 500"):
            docker_daemon.image(str(tmp_path / "broken.sock"), "x:1", 2)
    finally:
        server.close()


STOPPED = {"UnitFileState": "enabled", "ActiveState": "inactive"}


def test_a_stopped_engine_is_the_named_error_and_the_baselines_row():
    msg, findings = docker_daemon.verdict("dgx4", "docker.service", STOPPED, False,
                                          "/var/run/docker.sock: Connection refused")
    assert msg.startswith("docker is not running on dgx4 (enabled, inactive; ") and "systemctl start docker" in msg
    assert findings == [{"node": "dgx4", "stage": "host_baseline", "setting": "docker.service",
                         "expected": "enabled, active", "found": "enabled, inactive",
                         "fix": "systemctl enable --now docker.service"}]
    assert docker_daemon.verdict("dgx4", "docker.service", {"ActiveState": "active"}, True, "") == (None, [])


def test_a_running_engine_that_does_not_answer_says_restart_not_start():
    msg, findings = docker_daemon.verdict("dgx2", "docker.service", {"UnitFileState": "enabled",
                                                                     "ActiveState": "active"}, False, "no answer")
    assert "does not answer" in msg and findings[0]["found"] == "enabled, active, not answering (no answer)"
    assert findings[0]["fix"].startswith("systemctl restart docker.service")


@pytest.mark.parametrize("file_state", ["enabled", "disabled"])
def test_the_stage_finding_and_the_baselines_unit_row_are_one_doctor_row(file_state):
    """The unit policy (the host baseline's audit) and the stage's check see one stopped Docker: one row."""
    state = dict(STOPPED, UnitFileState=file_state)
    show = "Id=docker.service\nLoadState=loaded\nUnitFileState=%s\nActiveState=inactive\nConditionResult=yes\n" % (
        file_state)
    module = FakeModule({"default_target": None, "enable": ["docker.service"], "disable": [], "mask": []}, show)
    (unit, expected, found, fix, _), = unit_policy.policy_changes(module, unit_policy.Systemd(module), {}, [])
    baseline = drift.rows_from_result("dgx4", "host_baseline", "Units", {"drift": [
        {"setting": unit, "expected": expected, "found": found, "fix": fix}], "changed": True})
    _, findings = docker_daemon.verdict("dgx4", "docker.service", state, False, "refused")
    stage = drift.rows_from_result("dgx4", "image", "Docker answers on this node", {"failed": True,
                                                                                   "findings": findings})
    assert len(drift.dedupe(baseline + stage)) == 1


def test_the_host_baseline_enables_and_starts_docker_by_default():
    defaults = yaml.safe_load((ROOT / "roles" / "host_baseline" / "defaults" / "main.yml").read_text())
    assert defaults["host_baseline_container_units"] == ["docker.service"]
    steps = yaml.safe_load((ROOT / "roles" / "host_baseline" / "vars" / "main.yml").read_text())
    policy = next(s for s in steps["_host_baseline_unit_steps"] if s["module"] == "unit_policy")
    assert "host_baseline_container_units" in policy["args"]["enable"]


@pytest.mark.parametrize("tasks", ["roles/image/tasks/main.yml", "roles/serve/tasks/read.yml"])
def test_the_image_and_serve_stages_ask_docker_before_any_docker_call(tasks):
    text = (ROOT / tasks).read_text()
    assert "module: docker_daemon" in text
    assert text.index("module: docker_daemon") < min(
        i for i in (text.find("docker_image"), text.find("serve_facts"), text.find("from_lock")) if i >= 0)


class Module:
    """The parts of AnsibleModule that docker_daemon.run uses; its end (exit or fail) is raised as the result."""

    def __init__(self, **params):
        self.params = dict({"node": "dgx2", "unit": "docker.service", "timeout": 2, "images": [],
                            "managed_images": []}, **params)

    def get_bin_path(self, name):
        return None  # no systemctl: the unit's state is not read

    def exit_json(self, **result):
        raise Ended(dict(result, failed=False))

    def fail_json(self, **result):
        raise Ended(dict(result, failed=True))


class Ended(Exception):
    pass


def end(module):
    with pytest.raises(Ended) as ended:
        docker_daemon_module.run(module)
    return ended.value.args[0]


def test_the_image_stage_s_tag_is_declared_and_read_whether_or_not_docker_answers(tmp_path):
    """The release tag is the image stage's object on every node (the mutation test moves and removes it): it is
    declared when Docker answers, read after the other names, and declared too when Docker does not answer."""
    body = b'{"Id": "sha256:aa", "RepoTags": ["ds41f-lab:lab-1"]}'
    replies = [b"HTTP/1.1 200 OK\r\n\r\nOK",
               b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tmp_path / "docker.sock"))
    server.listen(2)

    def answer():
        for reply in replies:  # the ping, then the tag's read
            conn, _ = server.accept()
            conn.recv(256)
            conn.sendall(reply)
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        result = end(Module(socket=str(tmp_path / "docker.sock"), managed_images=["ds41f-lab:lab-1"]))
    finally:
        server.close()
    assert not result["failed"] and result["managed"] == [{"kind": "image", "name": "ds41f-lab:lab-1"}]
    assert [i["Id"] for i in result["images"]] == ["sha256:aa"]
    stopped = end(Module(socket=str(tmp_path / "absent.sock"), managed_images=["ds41f-lab:lab-1"]))
    assert stopped["failed"] and stopped["managed"] == [{"kind": "image", "name": "ds41f-lab:lab-1"}]
    assert "managed" not in end(Module(socket=str(tmp_path / "absent.sock")))  # the serve stage's ask declares none


def test_a_stopped_engine_is_not_asked_so_its_socket_does_not_start_it(tmp_path):
    """docker.service stopped, docker.socket listening: a ping would start the engine (a doctor that changes the
    node). The unit's state answers instead; an engine whose unit runs is pinged."""
    server = serve_once(tmp_path / "docker.sock", b"HTTP/1.1 200 OK\r\n\r\nOK")  # the socket unit, listening
    try:
        answering, seen = docker_daemon.answers(STOPPED, str(tmp_path / "docker.sock"), 2)
        assert not answering and seen == "not asked: its unit is inactive, and a look at its socket would start it"
        assert docker_daemon.answers({"ActiveState": "active"}, str(tmp_path / "docker.sock"), 2) == (True, "")
    finally:
        server.close()
    assert docker_daemon.answers({}, str(tmp_path / "absent.sock"), 1)[0] is False  # no systemd: the ping says


def test_the_units_state_is_read_through_the_hardware_layers_runner():
    """One reader for the image, serve and verify stages and the host baseline's runtime check (its Host.run): a
    stopped unit says not to ask, and no systemd (rc 127) leaves the ping to answer."""
    shown = {}

    def run(argv):
        shown["argv"] = argv
        return 0, "UnitFileState=enabled\nActiveState=inactive\n", ""

    state = docker_daemon.unit_state(run)
    assert shown["argv"] == ["systemctl", "show", "--property=UnitFileState,ActiveState", "--", "docker.service"]
    assert docker_daemon.stopped(state) == "not asked: its unit is inactive, and a look at its socket would start it"
    assert docker_daemon.unit_state(lambda argv: (127, "", "systemctl: not found")) == {}
    assert docker_daemon.stopped({}) is None
