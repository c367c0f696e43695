# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Filters of the serve stage: the launch spec of a rank, its docker command line, boot-log markers."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgxspark.ds41f.plugins.module_utils import boot_markers, launch, recipe
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain


def launch_spec(values, shape, rank, nodes, head_address):
    """The rank's launch spec from the recipe variables (serve_*, ds41f_release), the shape and the node (its
    spark_peer_hcas, spark_nccl_hcas and spark_gid_index come with ``values``):
    ``lookup('dgxspark.ds41f.serve_recipe') | launch_spec(spark_shape, spark_rank, spark_nodes | length,
    spark_head_address)``."""
    try:
        found = {k: plain(values[k]) for k in launch.VAR_NAMES if k in values}
        # plain data for Ansible (an SGLang boot command is a list that also carries its server arguments)
        return plain(launch.render(launch.recipe_from_vars(found), plain(shape), launch.node_from_vars(found, rank),
                                   {"nodes": int(nodes), "head_address": str(head_address)}))
    except launch.LaunchError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def docker_command(spec, image=None, api_key_file=None):
    """The ``docker run`` command line of a spec, as one shell-quoted string (for people and the doctor)."""
    import shlex

    return " ".join(shlex.quote(a) for a in launch.docker_run(plain(spec), image, api_key_file))


def boot_markers_missing(log, markers):
    """Markers (regular expressions) that ``log`` does not match."""
    return boot_markers.missing(log, plain(markers))


def boot_markers_found(log, markers):
    """Forbidden markers that ``log`` matches, each with its first matching line."""
    return boot_markers.found(log, plain(markers))


def boot_fallbacks(log, fallback, families):
    """Lines of ``log`` that report a fallback (``fallback``, a regular expression), each named by the first kernel
    family (``families``: name -> regular expression) the line mentions."""
    return boot_markers.fallbacks(log, fallback, plain(families))


def guard_gib(shapes, shape_name, startup, steady):
    """The memory guard's thresholds for this shape, as {startup, steady} GiB (recipe.guard_gib)."""
    start, steady = recipe.guard_gib(plain(shapes), shape_name, startup, steady)
    return {"startup": float(start), "steady": float(steady)}


class FilterModule:
    def filters(self):
        return {
            "launch_spec": launch_spec,
            "docker_command": docker_command,
            "boot_markers_missing": boot_markers_missing,
            "boot_markers_found": boot_markers_found,
            "boot_fallbacks": boot_fallbacks,
            "guard_gib": guard_gib,
        }
