# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The serve stage's preflight: every reason not to start, each naming the cause and the fix.

``check(nodes, shape, settings)`` takes every node's readings (``node``: dgxspark.ds41f.node_facts,
``serve``: dgxspark.ds41f.serve_facts, ``spec``: the rank's launch spec, ``fabric``: the fabric check's
verdict or None) and returns ``(problems, plan)``. ``plan['start']`` is False when every rank already runs
its spec: the stage then only re-checks readiness.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.drift import ACROSS_NODES, echo, spread_echo

# The preflight's own verdicts on what other stages check: each restates those checks' rows (its echo_of), so the
# doctor keeps it only where none of them is in the table.
FABRIC_VERDICT = "fabric check"
CHECKPOINT_VERDICT = "checkpoint"


def short(image_id):
    return (image_id or "?").replace("sha256:", "")[:12]


def _problem(text, node, setting, expected, found, consent=False, stage=None, unread=False, echo_of=None):
    """One reason not to start: its sentence (``text``, with its fix after "Fix: ") and the cause as a row (of
    ``stage`` where another stage owns the object, as the image). ``consent``: what a start would do, not a cause;
    ``unread``: a cause another row names (a node whose reading failed), so no row of its own; ``echo_of``: the
    rows this verdict restates (drift.echo), where the doctor folds it."""
    fix = text.split(" Fix: ", 1)[1] if " Fix: " in text else text
    out = {"text": text, "node": node, "setting": setting, "expected": expected, "found": found,
           "fix": fix.rstrip("."), "consent": consent, "unread": unread}
    if stage:
        out["stage"] = stage
    if echo_of:
        out["echo_of"] = echo_of
    return out


def _running(reading):
    found = (reading.get("serve") or {}).get("container")
    return found if found and found.get("running") else None


def _image_problems(nodes, image_ref):
    problems, ids = [], {}
    for node in nodes:
        image_id = node["serve"].get("image_id")
        if not image_id:
            problems.append(_problem("%s does not hold the image %s. Fix: run the image stage (it ships one image "
                                     "to every node)." % (node["name"], image_ref), node["name"],
                                     "image %s" % image_ref, "present", "absent", stage="image"))
        else:
            ids.setdefault(image_id, []).append(node["name"])
    if len(ids) > 1:
        ordered = sorted(ids.items(), key=lambda kv: -len(kv[1]))
        found = "; ".join("%s on %s" % (short(i), ", ".join(n)) for i, n in ordered)
        problems.append(_problem("the image %s has different IDs across nodes (%s). Fix: run the image stage: it "
                                 "ships one image with docker save | docker load; never rebuild it per node." % (
                                     image_ref, found), "all", "image %s ID" % image_ref, ACROSS_NODES,
                                 found, stage="image", echo_of=spread_echo("image")))
    return problems, ids


def check(nodes, shape, settings):
    """``nodes``: [{name, rank, node, serve, spec, fabric}] in rank order, ``unread`` (why) on a node whose serving
    state this run could not read (its facts are an older run's, so none is judged); ``settings``: replace,
    allow_reshape, restart (start anew, a rotated key), unqualified_shape, master_port, release, image (the reference
    that will run)."""
    problems, unchecked = [], []
    head = nodes[0]
    unread = [n for n in nodes if n.get("unread")]
    for node in unread:
        problems.append(_problem("%s: its serving state was not read (%s). Fix: fix what that node's row names, then "
                                 "run the serve stage again." % (node["name"], node["unread"]), node["name"],
                                 "serving state", "read", node["unread"], unread=True))
        unchecked.append("%s: its serving state (not read: %s)" % (node["name"], node["unread"]))
    nodes = [n for n in nodes if not n.get("unread")]
    for node in nodes:
        serve = node["serve"]
        if not serve.get("docker", {}).get("ok"):
            problems.append(_problem("%s: docker does not answer (%s). Fix: start Docker (systemctl start docker)." % (
                node["name"], serve.get("docker", {}).get("version") or "no reply"), node["name"], "unit docker",
                "answering", serve.get("docker", {}).get("version") or "no reply"))
        page = (node.get("node") or {}).get("page_size")
        container = (node.get("node") or {}).get("container")
        if container:
            # A lab node reads the host's kernel: the kernel stage's gate, not this page size, stands for its boot.
            unchecked.append("%s: page size (a %s container runs the host's kernel)" % (node["name"], container))
        elif page != shape["page_size"]:
            fix = ("run the kernel stage (the 64 KiB kernel) on %s" % node["name"] if shape["page_size"] == 65536
                   else "boot %s into the stock 4 KiB kernel, or use a 64 KiB shape" % node["name"])
            problems.append(_problem("%s: the running kernel's page size is %s, but %s needs %d. Fix: %s." % (
                node["name"], "unreadable" if page is None else "%d bytes" % page, shape["name"],
                shape["page_size"], fix), node["name"], "running kernel page size", shape["page_size"], page))
        fabric = node.get("fabric")
        if fabric is not None and not fabric.get("ok"):
            problems.append(_problem("%s: the fabric check fails (%s). Fix: run the fabric stage and fix what its "
                                     "check names." % (node["name"], fabric.get("message") or "no detail"),
                                     node["name"], FABRIC_VERDICT, "every path passes",
                                     fabric.get("message") or "no detail", echo_of=echo(path=True)))
        model = serve.get("model") or {}
        if not model.get("verified"):
            if not model.get("config"):
                what = "no config.json there"
            else:
                what = "%s names %s" % (model.get("info"), model.get("info_path") or "no verified checkpoint")
            problems.append(_problem("%s: the model at %s is not verified (%s). Fix: run the model stage." % (
                node["name"], model.get("dir"), what), node["name"], "%s %s" % (CHECKPOINT_VERDICT, model.get("dir")),
                "verified", what, echo_of=echo(stage="model", node=node["name"])))
        for path in serve.get("env_files_missing") or []:
            problems.append(_problem("%s: the env file %s is missing. Fix: run the fabric stage (it writes the NCCL "
                                     "environment), or set serve_nccl_env_file to ''." % (node["name"], path),
                                     node["name"], path, "present", "absent"))

    image_problems, ids = _image_problems(nodes, settings["image"])
    problems += image_problems

    if not shape.get("qualified_reference") and not settings.get("unqualified_shape"):
        problems.append(_problem("%s is not qualified for release %s (no release benchmark names it). Fix: re-run "
                                 "with -e '{\"serve_unqualified_shape\": true}' to start it anyway." % (shape["name"],
                                                                                       settings["release"]),
                                 "all", "setting serve_unqualified_shape", "true (the shape is unqualified)",
                                 "false"))

    ports = None if head.get("unread") else head["serve"].get("ephemeral_ports")
    port = settings["master_port"]
    if ports and ports[0] <= port <= ports[1]:
        problems.append(_problem("serve_master_port %d lies inside %s's ephemeral port range %d-%d, where any "
                                 "outgoing connection may take it first. Fix: choose a port below %d (the seeds use "
                                 "9999)." % (port, head["name"], ports[0], ports[1], ports[0]), head["name"],
                                 "setting serve_master_port", "below %d" % ports[0], port))

    start, running = bool(settings.get("restart")), []  # restart: a start anew even of ranks that run their spec
    for node in nodes:
        found = _running(node)
        want = node["spec"]["labels"]
        if found is None:
            start = True
            continue
        # Same spec and the very image the reference names now (a re-tagged image is a new engine).
        same = (found["labels"].get("ds41f.spec") == want["ds41f.spec"]
                and found.get("image_id") == (settings.get("image_id") or node["serve"].get("image_id")))
        if not same:
            start = True
        running.append((node, found, same))
    replacing = []
    if start:
        for node, found, _ in running:
            replacing.append(node["name"])
            old_shape = found["labels"].get("ds41f.shape")
            new_shape = node["spec"]["labels"]["ds41f.shape"]
            if old_shape and old_shape != new_shape and not settings.get("allow_reshape"):
                problems.append(_problem("%s runs an engine of another shape (%s; this start is %s). Fix: re-run "
                                         "with -e '{\"serve_allow_reshape\": true}' to change the running engine's "
                                         "shape." % (
                                             node["name"], old_shape, new_shape), node["name"],
                                         "container %s shape" % node["spec"]["name"], new_shape, old_shape,
                                         consent=True))
            elif not settings.get("replace"):
                problems.append(_problem(
                    "%s already runs %s (release %s, image %s); this start is release %s (image %s). Fix: re-run "
                    "with -e '{\"serve_replace\": true}' to replace it (it is kept aside and restored if the new "
                    "start fails)." % (
                        node["name"], node["spec"]["name"], found["labels"].get("ds41f.release", "?"),
                        short(found.get("image_id")), settings["release"],
                        short(settings.get("image_id") or node["serve"].get("image_id"))),
                    node["name"], "container %s" % node["spec"]["name"], "replaced with consent",
                    "running, no consent", consent=True))
    # A consent problem is what a start would do, not a cause: in the doctor the causes are the rows (the rank
    # that does not run its spec is the serving group's row), and the rest of the stage is not checked.
    causes = [{k: p[k] for k in ("node", "stage", "setting", "expected", "found", "fix", "echo_of") if k in p}
              for p in problems if not p["consent"] and not p["unread"]]
    plan = {"start": start or bool(unread), "replacing": replacing, "image_ids": ids, "unchecked": unchecked,
            "causes": causes, "consent_needed": [p["text"] for p in problems if p["consent"]],
            "unread": [n["name"] for n in unread]}
    return [p["text"] for p in problems], plan
