"""The doctor's last verdict in Prometheus text format (doctor.prom beside the report, and in node_exporter's
textfile folder with DS41F_TEXTFILE_DIR), read back with the Prometheus text parser (prometheus-client)."""

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, textfile


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_doctors_verdict_parses_with_rows_by_severity_and_nodes_not_read():
    rows = [drift.row("dgx3", "connection", "the node answers", "a reply within 15 s", "connected, no reply in 15 s",
                      "console"), drift.row("dgx2", "fabric", "enp1s0f0np0 mtu", "9000", "1500", "ds41f run fabric"),
            drift.row("dgx1", "serve", "x", "a", "b", "c", severity="warn")]
    text = textfile.render(textfile.doctor_metrics(drift.counts(rows), 4, 1, 1764750000.0))
    found = families(text)
    assert {s.labels["severity"]: s.value for s in found["ds41f_doctor_rows"].samples} == {"error": 2, "warn": 1}
    assert {s.labels["state"]: s.value for s in found["ds41f_doctor_nodes"].samples} == {"read": 3, "not_read": 1}
    assert found["ds41f_doctor_ok"].samples[0].value == 0
    assert found["ds41f_doctor_last_run_timestamp_seconds"].samples[0].value == 1764750000.0


@pytest.mark.parametrize("value", ['a "quoted" reason', "back\\slash", "two\nlines"])
def test_label_values_are_escaped_as_the_format_wants(value):
    text = textfile.render([("x", "gauge", "h", [({"reason": value}, 1)])])
    assert families(text)["ds41f_x"].samples[0].labels["reason"] == value


def test_the_file_is_replaced_whole(tmp_path):
    path = textfile.write(str(tmp_path), "doctor.prom", "ds41f_doctor_ok 1.0\n")
    textfile.write(str(tmp_path), "doctor.prom", "ds41f_doctor_ok 0.0\n")
    assert Path(path).read_text() == "ds41f_doctor_ok 0.0\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "doctor.prom"]


def test_the_callback_writes_it_beside_the_report_and_into_the_textfile_folder(tmp_path, monkeypatch):
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    monkeypatch.setenv("DS41F_TEXTFILE_DIR", str(tmp_path / "node-exporter"))
    cb = CallbackModule()
    # dgx3 silent; dgx1 ran the failing verdict (read all the same); localhost, the controller's plays, is no node
    cb._stats_hosts, cb._stats_failed = ["dgx1", "dgx2", "dgx3", "localhost"], ["dgx1", "dgx3"]
    cb._stats_dark = ["dgx3"]
    assert cb._nodes() == ["dgx1", "dgx2", "dgx3"]  # what the summary line counts, too
    written = cb._textfile(str(tmp_path / "report"), [])
    assert written == [str(tmp_path / "report" / "doctor.prom"), str(tmp_path / "node-exporter" / "ds41f_doctor.prom")]
    found = families(Path(written[1]).read_text())
    assert found["ds41f_doctor_ok"].samples[0].value == 1
    assert {s.labels["state"]: s.value for s in found["ds41f_doctor_nodes"].samples} == {"read": 2, "not_read": 1}
