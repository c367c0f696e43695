# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The NCCL and collective environment of one node, from the recipe and the topology.

The recipe holds what every node of a fabric family shares (``fabric_nccl_env_common`` plus
``fabric_nccl_env_direct`` for the triangle and switched shapes, or ``fabric_nccl_env_ring`` for the
switchless ring). The topology adds what differs per node or site: ``NCCL_IB_HCA`` from this node's cables
(``=`` so NCCL matches the names exactly), the GID slot, and the management netdev for socket bootstrap.

``problems`` catches what would go wrong silently: a control that only a patched NCCL reads (an unpatched
one ignores it without a word), ring settings missing on the ring or present elsewhere, recipe keys
that the topology owns, and a serve_env that overrides any of these in the container (``--env`` wins over
``--env-file``). sparknet's variables are the serve stage's (``sparknet.py``, rendered into the launch spec).
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils import sparknet
from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import Problem

# Controls that exist only in a patched NCCL 2.30.7, and the patches (names used in fabric_nccl_patches)
# that read them.
PATCH_CONTROLS = {
    "NCCL_SWITCHLESS_BIDIRECTIONAL": ("bidirectional-switchless-rings", "balanced-channel-allocation"),
    "NCCL_MIN_TRAFFIC_PER_CHANNEL": ("balanced-channel-allocation",),
    "NCCL_SWITCHLESS_RING_ONLY": ("switchless-ring-only",),
}
# On a ring without a cable between ranks two apart, NCCL must stay on neighbour rings: Ring only, subnet
# matching at /24, and connections made lazily (which needs cuMem in 2.30.7).
RING_REQUIRED = {
    "NCCL_ALGO": "Ring",
    "NCCL_IB_SUBNET_PREFIX_LEN": "24",
    "NCCL_RUNTIME_CONNECT": "1",
    "NCCL_CUMEM_ENABLE": "1",
}
RING_ONLY = ("NCCL_ALGO", "NCCL_IB_SUBNET_PREFIX_LEN", "NCCL_RUNTIME_CONNECT", "NCCL_SWITCHLESS_BIDIRECTIONAL",
             "NCCL_MIN_TRAFFIC_PER_CHANNEL", "NCCL_SWITCHLESS_RING_ONLY")
SOCKET_KEYS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")
TOPOLOGY_KEYS = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX") + SOCKET_KEYS
PROFILE_VARS = {"ring": "fabric_nccl_env_ring", "direct": "fabric_nccl_env_direct"}
# The sparknet transport of each fabric (topology.SHAPES carries it per shape).
TRANSPORTS = {"triangle": "oneshot-direct", "ring": "oneshot-ring4", "switched": "oneshot-switched"}


def family(fabric):
    """The recipe profile of a shape's fabric: ``ring`` for the switchless ring, else ``direct``."""
    return "ring" if fabric == "ring" else "direct"


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def environment(fabric, hcas, gid_index, socket_ifname, common, direct, ring):
    """The environment of one node as {name: text}, sorted by name."""
    env = {k: _text(v) for k, v in (common or {}).items()}
    env.update({k: _text(v) for k, v in ((ring if family(fabric) == "ring" else direct) or {}).items()})
    env["NCCL_IB_HCA"] = "=" + ",".join(hcas)
    if isinstance(gid_index, int) and not isinstance(gid_index, bool):
        env["NCCL_IB_GID_INDEX"] = str(gid_index)
    # gid_index 'auto': leave it out, so NCCL picks the RoCE v2 slot of each HCA itself.
    for key in SOCKET_KEYS:
        env[key] = socket_ifname
    return dict(sorted(env.items()))


def ignored(env, patches):
    """[(name, missing patches)] for controls the declared NCCL build would silently ignore."""
    out = []
    for key, needs in sorted(PATCH_CONTROLS.items()):
        if key in env and env[key] not in ("", "0"):
            missing = [p for p in needs if p not in (patches or [])]
            if missing:
                out.append((key, missing))
    return out


def env_file(env, node, shape):
    """The env file text: docker --env-file format (KEY=VALUE, no quotes, no shell expansion)."""
    head = ("# NCCL and collective environment of %s (%s), written by the dgxspark.ds41f fabric stage.\n"
            "# docker --env-file format: KEY=VALUE, values taken literally. Do not edit: change the recipe.\n"
            % (node, shape))
    return head + "".join("%s=%s\n" % item for item in env.items())


def problems(fabric, values):
    """Recipe problems for a shape's fabric; ``values`` holds the fabric_nccl_* recipe variables."""
    out = []
    which = PROFILE_VARS[family(fabric)]
    profile = values.get(which)
    common = values.get("fabric_nccl_env_common")
    if not isinstance(profile, dict) or not isinstance(common, dict):
        return out  # a wrong type is reported against the argument spec already
    for var, data in (("fabric_nccl_env_common", common), (which, profile)):
        for key, value in data.items():
            if key in TOPOLOGY_KEYS:
                out.append(Problem("%s.%s" % (var, key), "is derived from the site's topology per node.",
                                   "remove it; change the site file (cables, gid_index, management_interface)."))
            elif key.startswith("SPARKNET_"):
                out.append(Problem("%s.%s" % (var, key), "is a sparknet setting; the serve stage renders sparknet's "
                                   "environment into each rank's launch spec.",
                                   "move it to serve_sparknet_env (sizes) or remove it (routing)."))
            elif isinstance(value, (dict, list)) or value is None:
                out.append(Problem("%s.%s" % (var, key), "is %r; an environment value must be a "
                                   "string or number." % (value,), "write a single value."))
    env = {k: _text(v) for k, v in list(common.items()) + list(profile.items())}
    if family(fabric) == "ring":
        for key, want in RING_REQUIRED.items():
            if env.get(key) != want:
                out.append(Problem("%s.%s" % (which, key), "is %s; the switchless ring needs %s=%s (no cable "
                                   "joins ranks two apart)." % (env.get(key, "unset"), key, want),
                                   "set %s: %s in %s." % (key, want, which)))
    else:
        for key in RING_ONLY:
            if key in env:
                out.append(Problem("%s.%s" % (which if key in profile else "fabric_nccl_env_common", key),
                                   "is a switchless-ring setting; this shape's fabric is %s." % fabric,
                                   "remove it, or move it to fabric_nccl_env_ring."))
    out.extend(serve_env_problems(fabric, env, values))
    patches = values.get("fabric_nccl_patches")
    if isinstance(patches, list):
        for key, missing in ignored(env, patches):
            out.append(Problem(key, "is set, but the NCCL in the image lacks %s (fabric_nccl_patches), so "
                               "NCCL would ignore it without a word." % ", ".join(missing),
                               "add %s to fabric_nccl_patches if the image's NCCL carries it, or remove "
                               "%s from the recipe." % (", ".join(missing), key)))
    return out


def serve_env_problems(fabric, env, values):
    """serve_env keys that would override this node's NCCL environment against the shape's transport."""
    out = []
    serve_env = values.get("serve_env")
    if not isinstance(serve_env, dict):
        return out
    transport = (values.get("spark_shape") or {}).get("transport") or TRANSPORTS.get(fabric)
    for field, message, fix in sparknet.problems(transport, values.get("serve_sparknet_env"), serve_env):
        out.append(Problem(field, message, fix))
    for key, value in sorted(serve_env.items()):
        value = _text(value)
        if key in TOPOLOGY_KEYS:
            out.append(Problem("serve_env.%s" % key, "is derived from the site's topology per node (the fabric "
                               "stage's env file); set in serve_env it would override that on every rank.",
                               "remove it; change the site file (cables, gid_index, management_interface)."))
        elif family(fabric) == "ring" and key in RING_REQUIRED and value != RING_REQUIRED[key]:
            out.append(Problem("serve_env.%s" % key, "is %s; the switchless ring (%s) needs %s=%s." % (
                value, transport, key, RING_REQUIRED[key]), "remove it from serve_env."))
        elif family(fabric) != "ring" and key in RING_ONLY:
            out.append(Problem("serve_env.%s" % key, "is a switchless-ring setting; this shape's transport is %s."
                               % transport, "remove it from serve_env."))
        elif key.startswith("NCCL_") and key in env and env[key] != value:
            out.append(Problem("serve_env.%s" % key, "is %s, but the fabric profile sets %s for this shape." % (
                value, env[key]), "set it in one place: the fabric profile (%s)." % PROFILE_VARS[family(fabric)]))
    return out
