"""The topology picture: layout from the one model (pure), and a real SVG and PNG render."""

import glob

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology, topology_picture
from tests.conftest import ROOT


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
