# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_preflight
short_description: Refuse to start the engine, naming the cause, until every node is fit to serve
version_added: 0.1.0
description:
  - Runs on the controller (an action plugin) over every node's C(ds41f_node) (dgxspark.ds41f.node_facts),
    C(ds41f_serve) (dgxspark.ds41f.serve_facts) and C(serve_spec) (the rank's launch spec).
  - Refuses when a node runs a kernel of the wrong page size for the shape, fails the fabric check, lacks the
    image or holds another image ID than the others, lacks a verified model; when the shape is not qualified
    for the release (override O(unqualified_shape)); when the master port lies in the head's ephemeral port
    range; when a container of the same name runs another spec (override O(replace)); when the running engine
    is of another shape (override O(allow_reshape)).
  - Returns C(start) - false when every rank already runs its spec - and the nodes a start would replace.
options:
  hosts:
    description: The nodes to check; defaults to every host of the play.
    type: list
    elements: str
  release:
    description: The release being started.
    type: str
    required: true
  image:
    description: The image reference being started.
    type: str
    required: true
  image_id:
    description: An image ID the running containers must have (a rollback pins one).
    type: str
  master_port:
    description: The TP group's rendezvous port on the head.
    type: int
    required: true
  replace:
    description: Consent to replace running engine containers.
    type: bool
    default: false
  allow_reshape:
    description: Consent to replace a running engine of another shape.
    type: bool
    default: false
  restart:
    description: Start every rank anew even where it runs its spec (a rotated API key, which the running head was
      started with); needs O(replace) where an engine runs.
    type: bool
    default: false
  unqualified_shape:
    description: Start a shape no release benchmark qualified.
    type: bool
    default: false
  fabric:
    description:
      - Whether to refuse a node whose fabric check failed; each node's verdict C({ok, message}) is read from
        its fact C(serve_fabric_verdict), which the serve role sets from M(dgxspark.ds41f.fabric_check).
    type: bool
    default: true
extends_documentation_fragment: [dgxspark.ds41f.read_only]
attributes:
  action:
    support: full
    description: Runs as an action plugin on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Preflight
  dgxspark.ds41f.serve_preflight:
    release: "{{ ds41f_release }}"
    image: "{{ serve_image }}"
    master_port: "{{ serve_master_port }}"
    replace: "{{ serve_replace }}"
  run_once: true
"""

RETURN = r"""
start:
  description: Whether any rank must (re)start; false when every rank already runs its spec.
  returned: always
  type: bool
replacing:
  description: Nodes whose running engine a start replaces.
  returned: always
  type: list
  elements: str
problems:
  description: Every reason not to start, each with its fix.
  returned: always
  type: list
  elements: str
image_ids:
  description: Image ID to nodes holding it.
  returned: always
  type: dict
causes:
  description: Each problem that is a cause (not a consent a start would need), as a row - node, setting,
    expected, found, fix. The doctor's rows; also returned as C(drift).
  returned: always
  type: list
  elements: dict
consent_needed:
  description: The problems that only say what a start would replace (C(serve_replace), C(serve_allow_reshape)).
  returned: always
  type: list
  elements: str
skipped_checks:
  description: When it refuses, the rest of the serve stage per node as not checked, with the refusal as reason.
  returned: when it refuses
  type: list
  elements: dict
"""
