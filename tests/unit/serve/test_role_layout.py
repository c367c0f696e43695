"""roles/serve reads in one sitting: only tasks/main.yml includes task files (one level), no include name is
templated, every task file is used, and the memory guard is armed by its module alone (no systemctl tasks)."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "serve" / "tasks"
INCLUDE = ("ansible.builtin.include_tasks", "include_tasks")
IMPORT = ("ansible.builtin.import_tasks", "import_tasks")


def tasks_of(items):
    for task in items or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from tasks_of(task.get(key))


def uses():
    """[(file, keyword, target)] for every include and import in the role's task files."""
    found = []
    for path in sorted(TASKS.glob("*.yml")):
        for task in tasks_of(yaml.safe_load(path.read_text())):
            for keyword in INCLUDE + IMPORT:
                if keyword in task:
                    found.append((path.name, keyword, task[keyword]))
    return found


def test_only_main_includes_and_no_include_name_is_templated():
    found = uses()
    assert found, "no include found: the walk is broken"
    assert [(f, t) for f, k, t in found if k in INCLUDE and f != "main.yml"] == []
    assert [t for _, _, t in found if "{{" in str(t)] == []


def test_what_main_imports_imports_nothing_further_than_one_file():
    found = uses()
    nested = {t for f, _, t in found if f != "main.yml"}
    assert [(f, t) for f, _, t in found if f in nested] == []


def entry_points():
    """The role's task files that playbooks run on their own (tasks_from: ds41f stop, status, collective ...)."""
    found = set()
    for path in ROOT.glob("playbooks/**/*.yml"):
        for play in yaml.safe_load(path.read_text()) or []:
            for task in tasks_of((play.get("tasks") or []) + (play.get("pre_tasks") or [])):
                spec = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role") or {}
                if str(spec.get("name", "")).endswith("serve") and "tasks_from" in spec:
                    found.add(spec["tasks_from"])
    return found


def test_every_task_file_is_used_and_every_used_file_exists():
    used = {t for _, _, t in uses()} | {"main.yml"} | entry_points()
    files = {p.name for p in TASKS.glob("*.yml")}
    assert used == files


def arms_of(task):
    """The memory_guard calls of a task: the task itself, or its node_steps steps that run memory_guard."""
    if "dgxspark.ds41f.memory_guard" in task:
        return [task["dgxspark.ds41f.memory_guard"]]
    steps = (task.get("dgxspark.ds41f.node_steps") or {}).get("steps") or []
    return [step["args"] for step in steps if step.get("module") == "memory_guard"]


def test_the_guard_is_armed_by_its_module_in_every_phase_and_every_call_names_the_files_it_runs():
    arms = [(path.name, args) for path in sorted(TASKS.glob("*.yml"))
            for task in tasks_of(yaml.safe_load(path.read_text())) for args in arms_of(task)]
    assert {f for f, _ in arms} == {"guard_and_key.yml", "start.yml", "failed.yml"}
    assert len(arms) == 5
    assert [f for f, args in arms if args.get("restart_after") != "{{ serve__guard_runs }}"] == []
    assert not (TASKS / "guard.yml").exists()
