# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A picture of one cluster: nodes, cables, their PCIe paths and addresses, coloured by the last check.

``layout(cluster, node_status, path_status)`` is pure: it places nodes and paths and picks colours, so it
is unit-tested without a plotting library. ``svg(...)`` writes that layout as SVG text with the standard
library only (the doctor draws it on every run, in milliseconds); ``draw(...)`` writes the SVG and, when asked,
a PNG rendered with matplotlib. The cluster is the one model (topology.build); nothing here derives an address.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

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


# The SVG canvas: the layout's coordinates (x -1.8..1.8, y -1.45..1.45, y up) scaled to pixels (y down).
WIDTH, HEIGHT, SCALE = 1080, 870, 300


def _px(xy):
    return round((xy[0] + 1.8) * SCALE, 1), round((1.45 - xy[1]) * SCALE, 1)


def _text(xy, text, size, weight="normal", colour="#000", box=None):
    """Centred text, one <text> per line; ``box`` (a colour, or "none") draws a white box with that border
    behind it."""
    x, y = _px(xy)
    lines = str(text).split("\n")
    out = []
    if box:
        width, height = max(len(line) for line in lines) * size * 0.6 + 6, len(lines) * size * 1.2 + 2
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="white" fill-opacity="0.85" '
                   'stroke="%s" stroke-width="0.8"/>' % (x - width / 2, y - height / 2, width, height, box))
    for k, line in enumerate(lines):
        dy = (k - (len(lines) - 1) / 2.0) * size * 1.2
        out.append('<text x="%.1f" y="%.1f" font-size="%s" font-weight="%s" fill="%s" text-anchor="middle" '
                   'dominant-baseline="central">%s</text>' % (x, y + dy, size, weight, colour, escape(line)))
    return out


def svg(picture):
    """The layout as an SVG document (text stays text: searchable, and the same input gives the same bytes)."""
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Arial, sans-serif">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
           '<rect width="100%" height="100%" fill="white"/>']
    out += _text((0, 1.38), picture["title"], 17)
    if picture["switch"]:
        (x0, y0), (x1, y1) = _px((-0.3, 0.14)), _px((0.3, -0.14))
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="8" fill="#eceff1" stroke="#37474f" '
                   'stroke-width="1.5"/>' % (x0, y0, x1 - x0, y1 - y0))
        out += _text((0, 0.04), "RoCE switch", 13, "bold")
        out += _text((0, -0.06), "rails " + ", ".join(picture["switch"]["rails"]), 8)
    for p in picture["paths"]:  # every line first, so no line crosses a label
        (x0, y0), (x1, y1) = _px(p["start"]), _px(p["end"])
        dash = ' stroke-dasharray="8 5"' if p["status"] == "down" else ""
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s>'
                   '<title>%s %s</title></line>' % (x0, y0, x1, y1, COLOURS[p["status"]], dash, escape(p["cidr"]),
                                                    STATUS_WORDS[p["status"]]))
    for p in picture["paths"]:
        for text, xy in p["labels"]:
            out += _text(xy, text, 9, box="none")
        if not picture["switch"]:
            out += _text(p["mid"], p["cidr"], 9, "bold", COLOURS[p["status"]], box=COLOURS[p["status"]])
    for n in picture["nodes"]:
        colour = COLOURS[n["status"]]
        (x0, y0), (x1, y1) = _px((n["xy"][0] - 0.26, n["xy"][1] + 0.12)), _px((n["xy"][0] + 0.26, n["xy"][1] - 0.12))
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="8" fill="white" stroke="%s" '
                   'stroke-width="3"><title>%s %s</title></rect>' % (x0, y0, x1 - x0, y1 - y0, colour,
                                                                     escape(n["name"]), STATUS_WORDS[n["status"]]))
        out += _text((n["xy"][0], n["xy"][1] + 0.04), "%s%s" % (n["name"], " (head)" if n["head"] else ""), 13,
                     "bold")
        out += _text((n["xy"][0], n["xy"][1] - 0.05), "rank %d  %s" % (n["rank"], n["address"]), 10)
    used = sorted({n["status"] for n in picture["nodes"]} | {p["status"] for p in picture["paths"]},
                  key=list(COLOURS).index)
    for k, status in enumerate(used):  # the legend, bottom right
        y = HEIGHT - 20 - 18 * (len(used) - 1 - k)
        dash = ' stroke-dasharray="8 5"' if status == "down" else ""
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>' % (
            WIDTH - 150, y, WIDTH - 120, y, COLOURS[status], dash))
        out.append('<text x="%d" y="%d" font-size="11" dominant-baseline="central">%s</text>' % (
            WIDTH - 112, y, STATUS_WORDS[status]))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def draw(picture, svg_path=None, png_path=None):
    """Write a layout() as SVG (``svg``) and/or PNG (matplotlib, imported only for a PNG); the paths written."""
    written = []
    if svg_path:
        with open(svg_path, "w", encoding="utf-8") as handle:
            handle.write(svg(picture))
        written.append(svg_path)
    if png_path:
        written.append(_png(picture, png_path))
    return written


def _png(picture, png_path):
    """Render a layout() to PNG with matplotlib (imported here: only a PNG needs it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyBboxPatch

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
    fig.savefig(png_path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return png_path
