"""The release's boot-log markers: its own build's lines are required, a kernel family that fell back is named.

The spark-ds41f-1030 logs in tests/fixtures/boot-markers are constructed from the seeds' facts (its SOURCE.md
says which); the lab releases keep the lines their real engine (vLLM CPU and the lab-rank wrapper) prints.
"""

from pathlib import Path

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.filter import serve as serve_filters

from .conftest import ROOT

LOGS = ROOT / "tests" / "fixtures" / "boot-markers"
RELEASE = "spark-ds41f-1030"


def log(name):
    return (LOGS / ("spark-ds41f-1030-tp4-%s.constructed.log" % name)).read_text()


def verdict(markers, text):
    """What the serve role's smoke check asserts: missing, forbidden, fallbacks (all empty for a good start)."""
    return (serve_filters.boot_markers_missing(text, markers.get("required")),
            serve_filters.boot_markers_found(text, markers.get("forbidden")),
            serve_filters.boot_fallbacks(text, markers.get("fallback"), markers.get("kernel_families")))


@pytest.fixture
def markers(recipe):
    return recipe["serve_boot_markers"][RELEASE]


def test_a_start_with_the_builds_own_lines_passes(markers):
    assert verdict(markers, log("ready")) == ([], [], [])


def test_a_start_that_logs_a_fallback_is_refused_naming_the_kernel_family(markers):
    missing, forbidden, fallbacks = verdict(markers, log("mla-fallback"))
    assert missing == [] and forbidden == []
    assert len(fallbacks) == 1 and fallbacks[0].startswith("sparse MLA fell back: WARNING")


@pytest.mark.parametrize("line,family", [
    ("WARNING moe.py: routed experts kernel failed to compile, fell back to Triton", "routed experts"),
    ("WARNING engram.py: Engram gather falling back to torch", "Engram"),
    ("WARNING comm.py: sparknet all-reduce falls back to NCCL", "sparknet collectives"),
    ("WARNING x.py: something unexpected, falling back", "an unnamed kernel family"),
])
def test_each_family_is_named_and_an_unknown_one_still_refuses(markers, line, family):
    assert serve_filters.boot_fallbacks(log("ready") + line + "\n", markers["fallback"],
                                        markers["kernel_families"]) == ["%s fell back: %s" % (family, line)]


def test_a_start_without_tilelangs_prepare_line_is_missing_it(markers):
    missing, _, _ = verdict(markers, log("no-tilelang"))
    assert missing == ["(?i)\\btilelang\\b.*\\b(prepared|frozen|freez)"]


def test_the_generic_upstream_lines_alone_no_longer_pass(markers):
    upstream_only = "\n".join(line for line in log("ready").splitlines()
                              if "Initializing" in line or "KV cache" in line or "concurrency" in line
                              or "Starting vLLM" in line)
    missing, _, _ = verdict(markers, upstream_only)
    assert len(missing) == 3  # TileLang, DSpark, sparknet


@pytest.mark.parametrize("recipe_file", ["inventories/lab/group_vars/spark_cluster.yml",
                                         "molecule/serve-lab/group_vars/spark_cluster.yml",
                                         "molecule/verify-doctor/group_vars/spark_cluster.yml"])
def test_the_lab_releases_keep_the_lines_their_real_engine_prints(recipe_file):
    values = yaml.safe_load(Path(ROOT / recipe_file).read_text())
    for release, entry in values["serve_boot_markers"].items():
        # the lab engine's own lines: the lab-rank wrapper and upstream vLLM CPU, never the GPU build's
        assert "rank 0: serving alone, tensor parallel 1" in entry["required"], release
        assert "fallback" not in entry and "kernel_families" not in entry, release
        text = ("rank 0: serving alone, tensor parallel 1\nINFO Initializing a V1 LLM engine (v0.32.0) with\n"
                "INFO CPU KV cache size: 65,536 tokens\nINFO Starting vLLM server on http://0.0.0.0:8000\n")
        assert verdict(entry, text) == ([], [], [])
