"""Whether the serve stage qualifies a node (plugins/module_utils/qualify.decide, what node_qualify does before
anything runs), from recorded node trees: the H200 device machine and a GB10 run it, a lab container is skipped
with its reason, a DGX Spark without its driver fails. And the serve role asks before any rank starts."""

import jinja2
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import qualify
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES, ROOT

PLATFORM = FIXTURES / "platform"
NAME_QUERY = "nvidia-smi --query-gpu=name --format=csv,noheader"


def node(root, gpu_name_file=None):
    name = (PLATFORM / gpu_name_file).read_text() if gpu_name_file else None

    def run(argv):
        if name is not None and " ".join(argv) == NAME_QUERY:
            return 0, name, ""
        return 127, "", "%s: not found" % argv[0]

    return Host(str(root), run)


def test_a_node_with_a_loaded_driver_is_qualified_whatever_its_gpu():
    assert qualify.decide(node(PLATFORM / "h200", "h200/nvidia-smi-query-gpu-name.txt")) == ("run", None)
    assert qualify.decide(node(PLATFORM / "gb10", "gb10/nvidia-smi-query-gpu-name.txt")) == ("run", None)


def test_a_lab_node_is_skipped_and_the_reason_names_what_is_missing():
    action, reason = qualify.decide(node(PLATFORM / "labnode"))
    assert action == "skip"
    assert reason.startswith("node qualification skipped: not a DGX Spark, no NVIDIA driver (a podman container)")
    assert "/proc/driver/nvidia/version is missing" in reason


def test_a_spark_whose_driver_is_not_loaded_fails_instead_of_skipping(tmp_path):
    # The GB10's recorded nvidia-smi name, but no /proc/driver/nvidia/version under the root.
    action, reason = qualify.decide(node(tmp_path, "gb10/nvidia-smi-query-gpu-name.txt"))
    assert action == "fail" and "DGX Spark" in reason and "cannot be qualified" in reason


def test_the_serve_role_qualifies_before_any_rank_starts_and_shows_a_skip_reason():
    tasks = yaml.safe_load((ROOT / "roles" / "serve" / "tasks" / "main.yml").read_text())
    files = [t.get("ansible.builtin.include_tasks") or t.get("ansible.builtin.import_tasks") for t in tasks]
    start = next(i for i, f in enumerate(files) if f and "start.yml" in f)
    qualify_at = files.index("qualify.yml")
    assert qualify_at < start
    when = jinja2.Environment().compile_expression(tasks[qualify_at]["when"])

    def runs(start, check):
        return bool(when(serve_plan={"start": start}, ansible_check_mode=check, serve__engine_skip=False))

    assert runs(start=True, check=False) and runs(start=False, check=True)  # ranks about to start; the doctor
    assert not runs(start=False, check=False)  # an engine already serves the specs: its GPU memory is taken
    steps = yaml.safe_load((ROOT / "roles" / "serve" / "tasks" / "qualify.yml").read_text())
    # node_qualify as the one step of a node_steps call: registered as the module's own result would be
    assert [s["module"] for s in steps[0]["dgxspark.ds41f.node_steps"]["steps"]] == ["node_qualify"]
    assert steps[0]["register"] == "serve_qualified"
    # one message, run once, naming each node whose qualification was skipped and the module's reason
    assert steps[1]["run_once"] is True and steps[1]["when"] == "_serve_unqualified | length > 0"
    assert "selectattr('serve_qualified', 'skipped')" in steps[1]["vars"]["_serve_unqualified"]
    assert "serve_qualified.msg" in steps[1]["ansible.builtin.debug"]["msg"]
