"""`ds41f picture`: a site file's topology as SVG and PNG, the way docs/img was drawn."""

from ds41f import cli
from tests.conftest import ROOT


def test_picture_of_an_example_site(tmp_path, capsys):
    out = tmp_path / "ring4"
    assert cli.main(["picture", str(ROOT / "inventories" / "ring4"), str(out)]) == 0
    assert capsys.readouterr().out.split() == [str(out) + ".svg", str(out) + ".png"]
    svg = (tmp_path / "ring4.svg").read_text()
    assert "tp4-ring: 4 nodes" in svg and "10.14.2.0/24" in svg and "not checked" in svg
