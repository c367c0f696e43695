"""A recorded DGX Spark for the host checks' tests: a filesystem tree built from tests/fixtures and a table of
recorded command outputs, behind the hardware layer's Host; and the part of AnsibleModule a module's run() uses."""

from __future__ import annotations

import shutil

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

SPARK = FIXTURES / "spark-host"
BOOT = FIXTURES / "boot"
GPU_QUERY = ("nvidia-smi", "--query-gpu=name", "--format=csv,noheader")
GB10 = (0, (FIXTURES / "platform" / "gb10" / "nvidia-smi-query-gpu-name.txt").read_text(), "")
NO_GPU = (127, "", "nvidia-smi: not found")


def text(name, folder=SPARK):
    return (folder / name).read_text()


def tree(tmp_path, *names):
    """A node's root made of fixture trees laid over each other."""
    root = tmp_path / "root"
    for name in names:
        shutil.copytree(SPARK / name, root, dirs_exist_ok=True)
    root.mkdir(exist_ok=True)
    return root


def recorded(answers):
    """A runner that answers the commands of ``answers`` ({argv tuple: (rc, out, err)}) and refuses any other, so a
    test fails on a command nobody recorded; the calls are kept in ``.calls``."""
    def run(argv):
        run.calls.append(list(argv))
        if tuple(argv) not in run.answers:
            raise AssertionError("no recording of %s" % argv)
        return run.answers[tuple(argv)]
    run.calls, run.answers = [], dict(answers)
    return run


def host(root, answers):
    return Host(str(root), recorded(answers))


class Ended(Exception):
    def __init__(self, result, failed):
        super().__init__(result.get("msg"))
        self.result = dict(result, failed=failed) if failed else result


class FakeModule:
    """params, check_mode, run_command (recorded), exit_json and fail_json (they end the run with its result)."""

    def __init__(self, params, check_mode=True):
        self.params = params
        self.check_mode = check_mode
        self.commands = []

    def run_command(self, argv, check_rc=False):
        self.commands.append(list(argv))
        return 0, "", ""

    def exit_json(self, **result):
        raise Ended(result, failed=False)

    def fail_json(self, msg, **result):
        raise Ended(dict(result, msg=msg), failed=True)


def outcome(which, module, node_host, monkeypatch):
    """The result of the module ``which`` run by ``module`` on ``node_host`` (the Host its module_host gives)."""
    monkeypatch.setattr(which, "module_host", lambda _module: node_host)
    try:
        which.run(module)
    except Ended as end:
        return end.result
    raise AssertionError("the module ended without exit_json or fail_json")
