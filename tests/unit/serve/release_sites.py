"""The example sites the conformance tests compare with the recorded production launches: every rank's launch spec
and its env files' contents, rendered as the serve and fabric stages do (no Ansible, no node)."""

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch, nccl, topology

from .conftest import ROOT, load_recipe
from .sglang_recipe import sglang_values
from .test_launch import node_vars

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


def rendered(site):
    """([spec per rank], [env files per rank]) of ``site``."""
    values, c = site_values(site), site_cluster(site)
    recipe = launch.recipe_from_vars(values)
    shape = c.groupvars()["spark_shape"]
    specs = [launch.render(recipe, shape, node_vars(c, n.name), {"nodes": len(c.nodes), "head_address": c.head.address})
             for n in c.nodes]
    return specs, [env_files(values, c, n.name) for n in c.nodes]
