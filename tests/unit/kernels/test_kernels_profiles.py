"""Which device kind of thresholds.yml a GPU gets, and the architecture its kernels are built for."""

import pytest

from ds41f_kernels import profiles

KINDS = profiles.load()


@pytest.mark.parametrize("name,capability,kind,arch", [
    ("NVIDIA H200", (9, 0), "h200", "sm_90a"),           # the name torch reports on the device machine
    ("NVIDIA GB10", (12, 1), "gb10", "sm_121a"),
    ("a renamed SM121 part", (12, 1), "gb10", "sm_121a"),  # matched by capability alone
    ("NVIDIA H100 80GB HBM3", (9, 0), "default", "sm_90a"),
    ("NVIDIA A100-SXM4-80GB", (8, 0), "default", "sm_80"),
])
def test_devices_get_their_kind_and_architecture(name, capability, kind, arch):
    found, entry = profiles.resolve(KINDS, name, capability)
    assert (found, entry["arch"]) == (kind, arch)


def test_a_forced_kind_wins_and_an_unknown_one_is_refused():
    assert profiles.resolve(KINDS, "NVIDIA H200", (9, 0), "gb10")[0] == "gb10"
    with pytest.raises(ValueError, match="unknown device kind 'b200'"):
        profiles.resolve(KINDS, "NVIDIA H200", (9, 0), "b200")


def test_every_kind_declares_every_threshold_the_verdict_reads():
    needed = set(KINDS["h200"]["thresholds"])
    for kind, entry in KINDS.items():
        assert set(entry["thresholds"]) == needed, kind
        assert entry["thresholds"]["census_repeats"] >= 1000, kind
        assert {"stream_mib", "gemm", "decode_gemm"} <= set(entry["sizes"]), kind


def test_a_thresholds_file_without_a_default_kind_is_refused(tmp_path):
    path = tmp_path / "thresholds.yml"
    path.write_text("schema: 1\nkinds:\n  h200: {}\n")
    with pytest.raises(ValueError, match="expected schema 1 with a 'default' kind"):
        profiles.load(str(path))
