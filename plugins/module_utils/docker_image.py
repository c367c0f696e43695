# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Reading images through the docker CLI: ``run(argv)`` returns (rc, stdout, stderr)."""

from __future__ import annotations

import json


def inspect(run, ref):
    """``docker image inspect`` of one image (by tag or ID) as a dict, or None when it is not here."""
    rc, out, _ = run(["docker", "image", "inspect", ref])
    if rc != 0:
        return None
    data = json.loads(out or "[]")
    return data[0] if data else None


def labelled(run, key, value):
    """The IDs of the images labelled ``key=value``, newest first (a tagless one too), without repeats."""
    rc, out, _ = run(["docker", "images", "--quiet", "--no-trunc", "--filter", "label=%s=%s" % (key, value)])
    return list(dict.fromkeys(out.split())) if rc == 0 else []


def labels(info):
    return ((info or {}).get("Config") or {}).get("Labels") or {}


def short(image_id):
    return (image_id or "")[7:19] if (image_id or "").startswith("sha256:") else (image_id or "")[:12]
