# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A picture of one cluster: nodes, cables, their PCIe paths and addresses, coloured by the last check.

``layout(cluster, node_status, path_status)`` is pure: it places nodes and paths and picks colours, so it
is unit-tested without a plotting library. ``draw(...)`` renders that layout with matplotlib to SVG and
PNG. The cluster is the one model (topology.build); nothing here derives an address.
"""

from __future__ import annotations

import math

COLOURS = {
    "ok": "#2e7d32",
    "warn": "#f9a825",
    "drift": "#e65100",
    "down": "#c62828",
    "unchecked": "#9e9e9e",  # grey
}
STATUS_WORDS = {"ok": "ok", "warn": "warning", "drift": "drift", "down": "down", "unchecked": "not checked"}
PATH_GAP = 0.06  # the two PCIe paths of one cable are drawn side by side, this far apart
LABEL_GAP = 0.13  # and their labels this far out, on their own side


def _circle(count, radius=1.0, wide=1.3):
    """Rank 0 at the top, then clockwise, on an ellipse wider than tall (labels run horizontally)."""
    return [(wide * radius * math.sin(2 * math.pi * i / count), radius * math.cos(2 * math.pi * i / count))
            for i in range(count)]


def _offset(p, q, amount):
    """p and q moved sideways (perpendicular to p->q) by amount."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length * amount, dx / length * amount
    return (p[0] + nx, p[1] + ny), (q[0] + nx, q[1] + ny)


def _towards(p, q, fraction):
    return (p[0] + (q[0] - p[0]) * fraction, p[1] + (q[1] - p[1]) * fraction)


def layout(cluster, node_status=None, path_status=None):
    """Nodes and paths with positions, labels and status, ready to draw."""
    # Only a check colours: a node or path no check read (absent from the status maps) is "not checked".
    node_status = node_status or {}
    path_status = path_status or {}
    positions = dict(zip((n.name for n in cluster.nodes), _circle(len(cluster.nodes)), strict=True))
    nodes = []
    for n in cluster.nodes:
        status = node_status.get(n.name, "unchecked")
        nodes.append({"name": n.name, "rank": n.rank, "head": n.rank == 0, "address": n.address,
                      "xy": positions[n.name], "status": status})
    paths = []
    switch = None
    if cluster.shape.fabric == "switched":
        switch = {"xy": (0.0, 0.0), "rails": []}
        for row in cluster.cable_table():
            if row["cidr"] not in switch["rails"]:
                switch["rails"].append(row["cidr"])
        rails = switch["rails"]
        for row in cluster.cable_table():
            k = rails.index(row["cidr"])
            a = positions[row["a"]]
            start, end = _offset(_towards(a, (0, 0), 0.15), _towards(a, (0, 0), 0.8),
                                 (k - (len(rails) - 1) / 2.0) * PATH_GAP)
            paths.append(_path(row, start, end, path_status, labels=[]))
        for n in cluster.nodes:  # one label per node: its netdev and address on every rail
            mine = [p for p in paths if p["a"] == n.name]
            text = "\n".join("%s %s" % (r["a_netdev"], r["addresses"][n.name])
                             for r in cluster.cable_table() if r["a"] == n.name)
            mine[0]["labels"].append((text, _towards(positions[n.name], (0, 0), 0.45)))
    else:
        for row in cluster.cable_table():
            a, b = positions[row["a"]], positions[row["b"]]
            side = 1 if row["path"] % 2 else -1  # the two PCIe paths of a cable, one on each side
            start, end = _offset(_towards(a, b, 0.2), _towards(a, b, 0.8), side * PATH_GAP / 2)
            text_start, text_end = _offset(start, end, side * LABEL_GAP)
            paths.append(_path(row, start, end, path_status, labels=[
                (row["a_netdev"] + "\n" + row["addresses"][row["a"]], _towards(text_start, text_end, 0.12)),
                (row["b_netdev"] + "\n" + row["addresses"][row["b"]], _towards(text_start, text_end, 0.88)),
            ], mid=_towards(text_start, text_end, 0.5)))
    return {"title": "%s: %d nodes, %s fabric, MTU %d" % (cluster.shape.name, len(cluster.nodes),
                                                         cluster.shape.fabric, cluster.mtu),
            "nodes": nodes, "paths": paths, "switch": switch}


def _path(row, start, end, path_status, labels, mid=None):
    status = path_status.get(row["cidr"], "unchecked")
    return {"cidr": row["cidr"], "a": row["a"], "b": row["b"], "start": start, "end": end,
            "status": status, "labels": labels, "mid": mid or _towards(start, end, 0.5)}


def draw(picture, svg_path=None, png_path=None):
    """Render a layout() to SVG and/or PNG with matplotlib (imported here: the controller's only need)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyBboxPatch

    matplotlib.rcParams["svg.hashsalt"] = "ds41f"  # stable SVG ids, so pictures diff cleanly in git
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, and small
    fig, ax = plt.subplots(figsize=(12, 9))
    ax.set_xlim(-1.8, 1.8)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(picture["title"], fontsize=13)

    if picture["switch"]:
        ax.add_patch(FancyBboxPatch((-0.22, -0.12), 0.44, 0.24, boxstyle="round,pad=0.02", fc="#eceff1",
                                    ec="#37474f", lw=1.5, zorder=3))
        ax.text(0, 0.03, "RoCE switch", ha="center", va="center", fontsize=10, weight="bold", zorder=4)
        ax.text(0, -0.06, "rails " + ", ".join(picture["switch"]["rails"]), ha="center", va="center",
                fontsize=6.5, zorder=4, wrap=True)
    for p in picture["paths"]:
        colour = COLOURS[p["status"]]
        ax.plot([p["start"][0], p["end"][0]], [p["start"][1], p["end"][1]], color=colour, lw=2.2,
                ls="--" if p["status"] == "down" else "-", zorder=1)
        for text, xy in p["labels"]:
            ax.text(xy[0], xy[1], text, fontsize=6, ha="center", va="center", zorder=2,
                    bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 0.6})
        if not picture["switch"]:
            ax.text(p["mid"][0], p["mid"][1], p["cidr"], fontsize=6.5, ha="center", va="center", zorder=2,
                    color=colour, weight="bold", bbox={"fc": "white", "ec": colour, "pad": 0.8, "lw": 0.6})
    for n in picture["nodes"]:
        x, y = n["xy"]
        colour = COLOURS[n["status"]]
        # wide enough for "rank N  <management address>" at its font size
        ax.add_patch(FancyBboxPatch((x - 0.24, y - 0.1), 0.48, 0.2, boxstyle="round,pad=0.02", fc="white",
                                    ec=colour, lw=2.5, zorder=3))
        ax.text(x, y + 0.035, "%s%s" % (n["name"], " (head)" if n["head"] else ""), ha="center", va="center",
                fontsize=10, weight="bold", zorder=4)
        ax.text(x, y - 0.045, "rank %d  %s" % (n["rank"], n["address"]), ha="center", va="center", fontsize=7.5,
                zorder=4)
    used = sorted({n["status"] for n in picture["nodes"]} | {p["status"] for p in picture["paths"]},
                  key=list(COLOURS).index)
    ax.legend(handles=[Line2D([0], [0], color=COLOURS[s], lw=3, ls="--" if s == "down" else "-",
                              label=STATUS_WORDS[s]) for s in used],
              loc="lower right", fontsize=8, frameon=False)
    written = []
    for path in (svg_path, png_path):
        if path:
            fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Date": None} if path.endswith(".svg") else None)
            written.append(path)
    plt.close(fig)
    return written
