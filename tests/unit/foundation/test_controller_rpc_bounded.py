"""No run waits forever on the controller itself. From ansible-core 2.21, add_host and group_by run in a worker that
asks an RPC thread of the controller to change the inventory. In one CI run that thread died ("Exception in thread
Thread-1 (accepter)": it could not start a thread) and validate.yml waited until the test killed it at 300 s. Every
such task carries a timeout: the wait ends with the task's failure, which names it."""

import os
import subprocess
import sys
import time

import yaml
from ansible.release import __version__ as CORE

from tests.conftest import ROOT, TASK_FILES, tasks

BIN = os.path.dirname(sys.executable)
INVENTORY_ACTIONS = {"add_host", "group_by"}
# What the CI run's thread died of, injected into the controller's Python before ansible-core starts its RPC host.
DEAD_RPC_THREAD = '''import multiprocessing.managers
def accepter(self):
    raise RuntimeError("can't start new thread")
multiprocessing.managers.Server.accepter = accepter
'''


def inventory_tasks():
    """(file, task) of every task whose action changes the inventory."""
    for path in TASK_FILES:
        for task in tasks(yaml.safe_load(path.read_text())):
            if any(key.rsplit(".", 1)[-1] in INVENTORY_ACTIONS for key in task):
                yield path.relative_to(ROOT), task


def test_every_task_that_changes_the_inventory_has_a_time_budget():
    found = list(inventory_tasks())
    assert len(found) >= 2  # validate.yml's and reach.yml's marks
    for path, task in found:
        assert isinstance(task.get("timeout"), int) and 0 < task["timeout"] <= 60, "%s: %s" % (path, task["name"])


def test_validation_ends_when_the_controllers_rpc_thread_is_dead(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(DEAD_RPC_THREAD)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", PYTHONPATH=str(tmp_path),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), PATH=BIN + os.pathsep + os.environ["PATH"])
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", "molecule/triangle/site.spark.yml", "playbooks/validate.yml"]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True, timeout=240)
    took, out = time.monotonic() - start, proc.stdout + proc.stderr
    if tuple(int(p) for p in CORE.split(".")[:2]) >= (2, 21):
        assert "Exception in thread" in out and "can't start new thread" in out  # the fault took
        assert proc.returncode == 2, out[-3000:]
        assert "Mark the run validated" in out and "Timed out after 30 second" in out
        assert took < 120  # one time budget, not one per host
    else:  # older cores add the host on the controller itself: the dead thread is never asked
        assert proc.returncode == 0, out[-3000:]
