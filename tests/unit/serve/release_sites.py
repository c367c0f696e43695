"""The example sites the conformance tests compare with the recorded production launches: every rank's launch spec
and its env files' contents, rendered as the serve and fabric stages do (no Ansible, no node)."""

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, nccl, topology

from .conftest import ROOT, load_recipe
from .sglang_recipe import sglang_values
from .test_launch import node_vars

# The head's key file as the serve role names it (roles/serve: serve__api_key_file).
API_KEY_FILE = "/etc/ds41f/serve/api-key.env"
# site -> (inventory folder, engine): the two vLLM examples and the SGLang ring.
SITES = {"ring4": "vllm", "triangle3": "vllm", "ring4-sglang": "sglang"}


def site_cluster(site):
    raw = yaml.safe_load(next((ROOT / "inventories" / site).glob("*.spark.yml")).read_text())
    return topology.build(raw)


def site_values(site):
    return sglang_values() if SITES[site] == "sglang" else load_recipe()


def env_files(values, c, name):
    """What the fabric stage writes to serve_nccl_env_file on node ``name`` (empty when the recipe names none)."""
    path = values.get("serve_nccl_env_file")
    if not path:
        return {}
    hv = c.hostvars(name)
    shape = c.groupvars()["spark_shape"]
    env = nccl.environment(shape["fabric"], hv["spark_nccl_hcas"], c.gid_index, hv["spark_management_interface"],
                           values["fabric_nccl_env_common"], values["fabric_nccl_env_direct"],
                           values["fabric_nccl_env_ring"])
    return {path: {k: v.lstrip("=") if k == "NCCL_IB_HCA" else v for k, v in env.items()}}


def launches(site, **changes):
    """Every rank of ``site`` as `ds41f render --compare` reads it: {spec, words (its docker run words, the head's API
    key file included as the serve stage passes it), env_files}, after changing recipe variables."""
    values, c = dict(site_values(site), **changes), site_cluster(site)
    recipe = launch.recipe_from_vars(values)
    shape = c.groupvars()["spark_shape"]
    out = []
    for n in c.nodes:
        spec = launch.render(recipe, shape, node_vars(c, n.name), {"nodes": len(c.nodes),
                                                                    "head_address": c.head.address})
        key = API_KEY_FILE if spec["head"] and values.get("serve_api_key_required", True) else None
        out.append({"spec": spec, "words": launch.docker_run(spec, None, key),
                    "env_files": env_files(values, c, n.name)})
    return out
