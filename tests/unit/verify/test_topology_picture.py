"""The topology picture: layout from the one model (pure), its SVG (standard library) and a real PNG render."""

import glob
import sys
from xml.etree import ElementTree

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology, topology_picture
from tests.conftest import ROOT

SVG = "{http://www.w3.org/2000/svg}"


def example(name):
    return topology.build(yaml.safe_load(open(glob.glob(str(ROOT / "inventories" / name / "*.spark.yml"))[0])))


@pytest.mark.parametrize("name, nodes, paths", [("triangle3", 3, 6), ("ring4", 4, 8), ("switched", 8, 16)])
def test_every_node_and_path_of_the_model_is_drawn(name, nodes, paths):
    picture = topology_picture.layout(example(name))
    assert len(picture["nodes"]) == nodes and len(picture["paths"]) == paths
    assert {p["status"] for p in picture["paths"]} == {"unchecked"}
    labels = " ".join(text for p in picture["paths"] for text, _ in p["labels"])
    for row in example(name).cable_table():  # every address the model derives appears, none invented
        for address in row["addresses"].values():
            assert address in labels


def test_colours_follow_the_last_check_and_what_no_check_read_is_grey():
    cluster = example("ring4")
    cidrs = [row["cidr"] for row in cluster.cable_table()]
    picture = topology_picture.layout(cluster, {"dgx1": "ok", "dgx2": "drift"}, {cidrs[0]: "down", cidrs[1]: "ok"})
    status = {n["name"]: n["status"] for n in picture["nodes"]}
    assert status == {"dgx1": "ok", "dgx2": "drift", "dgx3": "unchecked", "dgx4": "unchecked"}
    paths = {p["cidr"]: p["status"] for p in picture["paths"]}
    assert paths[cidrs[0]] == "down" and paths[cidrs[1]] == "ok"
    assert {paths[c] for c in cidrs[2:]} == {"unchecked"}


def test_svg_and_png_are_written(tmp_path):
    svg, png = tmp_path / "t.svg", tmp_path / "t.png"
    topology_picture.draw(topology_picture.layout(example("triangle3"), {}, {}), str(svg), str(png))
    assert "10.12.1.1" in svg.read_text() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_svg_names_every_node_address_and_path_and_colours_them_by_status():
    cluster = example("ring4")
    cidrs = [r["cidr"] for r in cluster.cable_table()]
    picture = topology_picture.layout(cluster, {n.name: "ok" for n in cluster.nodes}, {cidrs[0]: "down"})
    text = topology_picture.svg(picture)
    root = ElementTree.fromstring(text)  # well-formed
    shown = " ".join(t.text for t in root.iter(SVG + "text"))
    for node in cluster.nodes:
        assert node.name in shown and node.address in shown
    for row in cluster.cable_table():
        assert row["cidr"] in shown and all(address in shown for address in row["addresses"].values())
    lines = {line.find(SVG + "title").text: line.attrib for line in root.iter(SVG + "line")
             if line.find(SVG + "title") is not None}  # the paths; the legend's lines have no title
    down = lines["%s down" % cidrs[0]]
    assert down["stroke"] == topology_picture.COLOURS["down"] and "stroke-dasharray" in down
    assert lines["%s not checked" % cidrs[1]]["stroke"] == topology_picture.COLOURS["unchecked"]
    assert "not checked" in shown and "down" in shown and "ok" in shown  # the legend names the colours used
    assert topology_picture.svg(picture) == text  # the same reading draws the same bytes


def test_only_a_png_needs_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    svg = tmp_path / "t.svg"
    assert topology_picture.draw(topology_picture.layout(example("switched")), str(svg)) == [str(svg)]
    assert "RoCE switch" in svg.read_text()
    with pytest.raises(ImportError):
        topology_picture.draw(topology_picture.layout(example("switched")), None, str(tmp_path / "t.png"))
