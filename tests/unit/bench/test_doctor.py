"""The doctor before the bench: a real `ds41f doctor` run that finds an error refuses the cluster."""

from ds41f.bench import doctor

# A site file the inventory plugin refuses (a ring of one node): the doctor fails on the controller, before
# any host is touched (the address is loopback's anyway).
BROKEN_SITE = "plugin: dgxspark.ds41f.spark_topology\nshape: tp4-ring\nnodes:\n  - {name: dgx1, address: 127.0.0.1}\n"


def test_a_doctor_with_errors_refuses_and_says_how_to_go_on(tmp_path):
    site = tmp_path / "broken.spark.yml"
    site.write_text(BROKEN_SITE)
    got = doctor.run(site, tmp_path / "doctor", skip=False, log=lambda m: None)
    assert got["status"] == "failed" and got["exit"] != 0
    assert "--skip-doctor" in got["why"]


def test_skipping_is_said_and_no_inventory_is_not_a_pass(tmp_path):
    assert doctor.run(tmp_path / "x.spark.yml", tmp_path, skip=True)["why"].startswith("SKIPPED by --skip-doctor")
    assert doctor.run(None, tmp_path, skip=False)["status"] == "not run"


def test_the_bench_refuses_to_measure_a_cluster_the_doctor_fails(tmp_path):
    import json

    from ds41f import cli
    from ds41f.bench import cli as bench_cli

    site = tmp_path / "broken.spark.yml"
    site.write_text(BROKEN_SITE)
    out = tmp_path / "report"
    # The URL is a port nothing listens on: the bench must stop before it sends anything.
    args = cli.parser().parse_args(["bench", "-i", str(site), "--url", "http://127.0.0.1:9", "--output", str(out)])
    assert bench_cli.run(args, log=lambda m: None) == 2
    data = json.loads((out / "bench.json").read_text())
    assert data["stopped"].startswith("the doctor refused the cluster") and "points" not in data
    assert data["doctor"]["status"] == "failed" and "Stopped" in (out / "bench.md").read_text()
