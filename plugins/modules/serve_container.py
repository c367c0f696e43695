# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_container
short_description: Run, replace, stop or restore one rank's engine container from its launch spec
version_added: 0.1.0
description:
  - Converges the engine container of one node to a launch spec rendered by the
    C(dgxspark.ds41f.launch_spec) filter, with the docker CLI.
  - C(started) runs the spec. A container of the same name that already runs the same spec (label
    C(ds41f.spec)) is left alone. A running container with another spec is replaced only with
    O(replace=true) - it is stopped and kept aside as C(<name>-replaced) so a failed start can restore it -
    and otherwise the module fails naming O(replace). A stopped container of the name is removed first.
  - C(aside) does only the first half - it stops a running container and keeps it aside, whatever spec it runs,
    and removes a stopped one. A tensor-parallel group starts as one (a rank left running would not join the new
    group), so the serve stage puts every rank aside this way before it starts any.
  - C(restored) puts the container kept aside back (removing what ran in its place) and starts it.
  - C(committed) removes the container kept aside once the new one is ready.
  - C(stopped) stops the container (C(docker stop) with O(stop_timeout)) and keeps it for its logs;
    C(absent) removes it.
options:
  spec:
    description:
      - The launch spec (C(dgxspark.ds41f.launch_spec)).
      - Only its C(name) is needed for C(stopped), C(absent), C(restored) and C(committed).
    type: dict
    required: true
  state:
    description: What to converge to.
    type: str
    choices: [started, aside, stopped, absent, restored, committed]
    default: started
  image:
    description: Run this image reference (an image ID from a release record) instead of the spec's C(image).
    type: str
  replace:
    description: Consent to stop a running container of the same name that runs another spec.
    type: bool
    default: false
  api_key_file:
    description:
      - An env file on the node holding the API key (C(VLLM_API_KEY=...)), passed with C(--env-file) to an engine
        that reads its key from the environment (vLLM).
      - Not passed to SGLang, which takes no key from the environment; its head's spec mounts the key as a
        C(--config) file instead (C(api_key_config) in the spec, written by the serve stage).
    type: path
  stop_timeout:
    description: Seconds C(docker stop) waits before it kills.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Reads the container and reports what it would do; runs nothing.
  diff_mode:
    support: full
    description: Shows the container's release, spec and state before and after.
  idempotent:
    support: full
    description: A container that already runs the spec is not touched.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Start this rank
  dgxspark.ds41f.serve_container:
    spec: "{{ serve_spec }}"
    replace: "{{ serve_replace }}"
"""

RETURN = r"""
actions:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
  sample: ["docker stop spark-ds41f (release lab-r1) and keep it as spark-ds41f-replaced", "docker run spark-ds41f"]
container:
  description: The container after the run (C(null) when there is none).
  returned: always
  type: dict
replaced:
  description: Whether a running container was kept aside for a restore.
  returned: always
  type: bool
drift:
  description: Differences between the node and the spec (setting, expected, found, fix).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_state, launch
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan


def describe(found):
    if found is None:
        return None
    return "%s %s (release %s, spec %s, image %s)" % (
        found["name"], found["status"], found["labels"].get("ds41f.release", "?"),
        found["labels"].get("ds41f.spec", "?"), (found.get("image_id") or "?")[:19])


class Docker:
    def __init__(self, module):
        self.module = module

    def __call__(self, *args):
        rc, out, err = self.module.run_command(["docker"] + [str(a) for a in args])
        if rc != 0:
            self.module.fail_json(msg="docker %s failed: %s" % (" ".join(map(str, args[:2])), (err or out).strip()),
                                  rc=rc)
        return out.strip()


def runs_spec(module, spec, found):
    """The container runs this spec from the image its reference names now (a re-tagged image is a new one)."""
    if found is None or not found["running"] or found["labels"].get("ds41f.spec") != spec["labels"].get("ds41f.spec"):
        return False
    wanted = engine_state.image_id(module.run_command, module.params["image"] or spec["image"])
    return found["image_id"] == wanted


def start(module, plan, docker, spec, found, backup, run=True):
    """Put a running container aside (or remove a stopped one), then run the spec unless ``run`` is false.
    Started, a container that already runs the spec is kept; put aside (``run`` false, the group's start), every
    running one is, its spec alike or not. Returns whether a running container was kept aside."""
    p = module.params
    name = spec["name"]
    want = spec["labels"].get("ds41f.spec")
    image = p["image"] or spec["image"]
    same = runs_spec(module, spec, found)
    if run and same:
        return False
    replaced = False
    if found is not None and found["running"]:
        if not p["replace"]:
            why = ("it runs this spec, but the tensor-parallel group starts anew (another rank does not run it)"
                   if same else "the spec differs")
            module.fail_json(msg="%s already runs %s on this node; %s. Fix: re-run with "
                                 "-e '{\"serve_replace\": true}' to replace it (it is kept aside and restored if "
                                 "the new start fails)." % (name, describe(found), why), container=found)
        if backup is not None:
            plan.change("%s kept aside" % name, None, describe(backup), "docker rm -f %s" % backup["name"],
                        lambda: docker("rm", "-f", backup["name"]))
        plan.change(name, "spec %s" % want, describe(found),
                    "docker stop %s (release %s) and keep it as %s%s" % (
                        name, found["labels"].get("ds41f.release", "?"), name, engine_state.BACKUP_SUFFIX),
                    lambda: (docker("stop", "--time", p["stop_timeout"], name),
                             docker("rename", name, name + engine_state.BACKUP_SUFFIX)))
        replaced = True
    elif found is not None:
        plan.change(name, "spec %s" % want, describe(found), "docker rm %s (%s)" % (name, found["status"]),
                    lambda: docker("rm", "-f", name))
    if not run:
        return replaced
    plan.change(name + " running", "spec %s, image %s" % (want, image), describe(found) if not replaced else None,
                "docker run %s (release %s, rank %s)" % (name, spec["labels"].get("ds41f.release"), spec["rank"]),
                lambda: docker(*launch.docker_run(spec, image, p["api_key_file"])[1:]))
    return replaced


def main():
    module = AnsibleModule(argument_spec={
        "spec": {"type": "dict", "required": True},
        "state": {"type": "str", "default": "started",
                  "choices": ["started", "aside", "stopped", "absent", "restored", "committed"]},
        "image": {"type": "str"},
        "replace": {"type": "bool", "default": False},
        "api_key_file": {"type": "path", "no_log": False},
        "stop_timeout": {"type": "int", "default": 60},
    }, supports_check_mode=True)
    p = module.params
    spec = p["spec"]
    name = spec.get("name")
    if not name:
        module.fail_json(msg="spec has no name. Fix: pass a spec from the dgxspark.ds41f.launch_spec filter.")
    if module.get_bin_path("docker") is None:
        module.fail_json(msg="docker is not installed on this node.")
    docker = Docker(module)
    run = module.run_command
    found = engine_state.container(run, name)
    backup_name = name + engine_state.BACKUP_SUFFIX
    backup = engine_state.container(run, backup_name)
    plan = Plan(module)
    replaced = False
    state = p["state"]
    if state in ("started", "aside"):
        replaced = start(module, plan, docker, spec, found, backup, run=state == "started")
    elif state == "stopped":
        if found is not None and found["running"]:
            plan.change(name, "stopped", describe(found), "docker stop --time %d %s" % (p["stop_timeout"], name),
                        lambda: docker("stop", "--time", p["stop_timeout"], name))
    elif state == "absent":
        if found is not None:
            plan.change(name, None, describe(found), "docker rm -f %s" % name, lambda: docker("rm", "-f", name))
    elif state == "restored":
        if backup is not None:
            if found is not None:
                plan.change(name, describe(backup), describe(found), "docker rm -f %s (the failed start)" % name,
                            lambda: docker("rm", "-f", name))
            plan.change(name + " running", describe(backup), None,
                        "docker rename %s %s and start it" % (backup_name, name),
                        lambda: (docker("rename", backup_name, name), docker("start", name)))
    elif state == "committed" and backup is not None:
        plan.change(backup_name, None, describe(backup), "docker rm -f %s (replaced)" % backup_name,
                    lambda: docker("rm", "-f", backup_name))
    after = found if module.check_mode else engine_state.container(run, name)
    module.exit_json(**plan.result(container=after, replaced=replaced))


if __name__ == "__main__":
    main()
