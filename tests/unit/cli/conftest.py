import pytest

from ds41f import runs


@pytest.fixture(autouse=True)
def run_folders(monkeypatch, tmp_path):
    """Every run these tests start keeps its folder under the test's own tmp_path."""
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
