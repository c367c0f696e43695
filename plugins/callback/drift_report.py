# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: drift_report
type: stdout
short_description: One drift table at the end of a run (the doctor's output), plus JSON, Markdown and a picture
version_added: 0.1.0
description:
  - Prints one line per play and every failure in full, then one table of everything that differs from the
    recipe and the site - node, stage, setting, expected, found, fix - instead of pages of task output.
  - Rows come from the C(drift) lists of the stages' modules in check mode, the C(findings) of the verify
    stage's live checks, cross-node C(mismatches), and any other task that would change something or failed.
    A failed task counts even when the doctor's plays ignore errors (they do, so every stage runs to the end);
    a later failure of the same stage on the same node that names no cause is listed as not checked, with
    the first cause as its reason.
  - A module's C(progress) line is printed as its node finishes (the checkpoint scrub of C(ds41f doctor --deep)).
  - Every check a module says it did not make (hardware the node lacks, an earlier refusal) is listed under
    "not checked", per node, with its reason; the picture colours only what a check read.
  - C(doctor.json) also lists, under C(managed), every object the stages' modules declared they manage (node,
    stage, kind, name and its wanted state), which the mutation test (tests/mutation/) changes one by one.
  - Writes C(doctor.json), C(doctor.md) and the topology picture (C(topology.svg), and C(topology.png) with
    O(png)) coloured by the check, under O(report_dir).
  - It computes no verdict. Before the doctor's verdict task (M(dgxspark.ds41f.doctor_report)) runs, it saves
    what the run found so far to C(findings.json) there; that task folds the rows into the table, colours the
    picture and fails the run when any row is an error, and this callback renders what it returned. A run that
    ended before its verdict (a refused validation) shows the rows as found, unfolded, and says so.
  - C(ds41f doctor) selects this callback; otherwise set C(ANSIBLE_STDOUT_CALLBACK=dgxspark.ds41f.drift_report).
options:
  report_dir:
    description: Folder for the report files; created if missing. Without it, C(reports/doctor) under the
      working folder.
    type: path
    env:
      - name: DS41F_REPORT_DIR
    ini:
      - section: dgxspark_drift_report
        key: report_dir
  png:
    description: Also write the picture as C(topology.png) (matplotlib draws it, about half a second of CPU;
      C(ds41f doctor --png) sets it). The SVG is always written.
    type: bool
    default: false
    env:
      - name: DS41F_DOCTOR_PNG
    ini:
      - section: dgxspark_drift_report
        key: png
"""

import json
import os
import time

from ansible import constants as C
from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import (
    doctor_verdict,
    drift,
    textfile,
    topology_picture,
)
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import plain

VERDICT_ACTIONS = ("dgxspark.ds41f.doctor_report", "doctor_report")
META_ACTIONS = ("meta", "ansible.builtin.meta", "ansible.legacy.meta")
STEP_ACTIONS = ("dgxspark.ds41f.node_steps", "node_steps")
# A message changes nothing: one marked changed only notifies the handlers of what did change (the host baseline's
# follow-up work), whose own row is the cause.
MESSAGE_ACTIONS = ("ansible.builtin.debug", "debug")


def _stage(task):
    # A role's task is named "<role> : <name>" (Task.get_name); the role's short name is the stage.
    own, full = task.name or task.action, task.get_name()
    if full != own and full.endswith(" : %s" % own):
        return full[:-len(own) - 3].rsplit(".", 1)[-1]
    play = task.get_play() if hasattr(task, "get_play") else None
    return (play.get_name() if play else "") or "doctor"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "dgxspark.ds41f.drift_report"

    def __init__(self):
        super().__init__()
        self.rows = []
        self.skipped = []
        self.checked = None  # the live checks' {nodes, paths}, when they ran
        self.managed = []  # every object a stage's modules declared they manage: {node, stage, kind, name, ...}
        self.first_cause = {}  # (node, stage): the first failure's cause, the reason later failures are echoes
        self.site = None
        self._cluster = None
        self.started = time.monotonic()
        self.plays = 0
        self.collective_shown = False
        self.verdict = None  # what the verdict task returned: {rows, counts, picture}

    # -- what the run does -------------------------------------------------------------------------

    def v2_playbook_on_play_start(self, play):
        self.plays += 1
        hosts = ", ".join(play.hosts) if isinstance(play.hosts, list) else str(play.hosts)
        self._display.display("[%5.1fs] %s (%s)" % (time.monotonic() - self.started, play.get_name(), hosts))
        if self.site is None:
            self.site = self._site_of(play)

    def _site_of(self, play):
        """The site file as the inventory read it (spark_site), to draw the picture from the one model."""
        known = play.get_variable_manager().get_vars(play=play)
        hosts, hostvars = known.get("ansible_play_hosts_all"), known.get("hostvars")
        if not hosts or hostvars is None:
            return None
        return plain(hostvars[hosts[0]].get("spark_site"))

    def cluster(self):
        """The one model of the site, or None when the run has no site (or an invalid one)."""
        if self._cluster is None and self.site:
            self._cluster = doctor_verdict.cluster(self.site)
            if self._cluster is None:  # an invalid site: the validation's own row says why
                self.site = None
        return self._cluster

    def findings(self):
        """What the run found so far, unfolded: the verdict task's input."""
        return {"rows": self.rows, "checked": self.checked}

    def v2_playbook_on_task_start(self, task, is_conditional):
        if task.action in VERDICT_ACTIONS:
            doctor_verdict.write_findings(self._report_dir(), self.findings())

    def v2_runner_on_ok(self, result):
        self._collect(result)
        self._show_collective(result)
        self._show_progress(result)

    def _show_progress(self, result):
        """A long task's line per node as that node finishes (ds41f doctor --deep: what each node's scrub read)."""
        line = result.result.get("progress")
        if isinstance(line, str) and line:
            self._display.display("  %s: %s" % (result.host.get_name(), line))

    def _show_collective(self, result):
        """doctor --collective: the verdict (where the ranks met, join times, bandwidth) once, as it is set."""
        verdict = (result.result.get("ansible_facts") or {}).get("serve_collective_verdict")
        if isinstance(verdict, dict) and not self.collective_shown:
            self.collective_shown = True
            lines = [str(verdict.get("message", ""))] + list(verdict.get("lines") or [])
            self._display.display("  " + "\n  ".join(lines), color="green" if verdict.get("ok") else "red")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        # The doctor's stage plays ignore errors so that every stage runs; a failure still counts here.
        self._collect(result, failed=True)
        msg = result.result.get("msg") or result.result.get("stderr") or "failed"
        self._display.display("  FAILED %s | %s: %s" % (result.host.get_name(), result.task.get_name(),
                                                        drift._first_line(str(msg), 300)), color="red")

    def v2_runner_on_skipped(self, result):
        if result.task.action not in META_ACTIONS:  # a meta task's skip is a condition, not a check
            self._not_checked(result.host.get_name(), result.task, result.result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        node = result.host.get_name()
        self.rows.append(drift.unreachable_row(node, result.task.get_name(), result.result, self._budget()))
        self._display.display("  UNREACHABLE %s: %s" % (node, result.result.get("msg")),
                              color="red")

    def _collect(self, result, failed=False):
        task = result.task
        if task.action in VERDICT_ACTIONS:
            if "rows" in result.result:  # the verdict, computed by that task: this callback renders it
                self.verdict = {k: result.result.get(k) for k in ("rows", "counts", "picture")}
            elif failed:  # it read no findings (findings.json missing or unreadable): its failure is a row
                self.rows.extend(drift.rows_from_result(result.host.get_name(), "doctor", task.name or task.action,
                                                        dict(result.result, failed=True)))
            return
        if (isinstance(task, Handler) and not failed) or (
                task.action in MESSAGE_ACTIONS and not failed):
            return  # the verdict sums up the table; a handler that would run echoes a change already in it
        stage = _stage(task)
        node = result.host.get_name()
        name = task.name or task.action
        steps = result.result.get("results") if task.action in STEP_ACTIONS else None
        if isinstance(steps, list):  # node_steps: each step counts as the task it stands for
            for step in steps:
                self._collect_one(node, stage, step.get("step") or name, step, bool(step.get("failed")))
            return
        # callbacks get no 'failed' key
        self._collect_one(node, stage, name, dict(result.result, failed=True) if failed else result.result, failed)

    def _budget(self):
        """Seconds of silence after which ssh gives a node up, from the ssh connection's own settings."""
        try:
            return drift.keepalive_budget(
                C.config.get_config_value("ssh_args", plugin_type="connection", plugin_name="ssh"),
                C.config.get_config_value("timeout", plugin_type="connection", plugin_name="ssh"))
        except Exception:  # a setting this ansible-core does not know: the row says "the budget of"
            return None

    def _collect_one(self, node, stage, name, res, failed):
        if failed and res.get("timedout"):  # ran past its time limit: the node is silent, later tasks echo it
            self.rows.append(drift.timed_out_row(node, name, res))
            self.first_cause.setdefault((node, stage), "after the node stopped answering")
            return
        self.skipped.extend(drift.not_checked(node, name, res))
        for entry in res.get("managed") or []:
            item = dict(entry, node=node, stage=stage)
            if isinstance(entry, dict) and item not in self.managed:
                self.managed.append(item)
        if res.get("checked") and isinstance(res["checked"], dict):  # doctor_checks: what the live checks read
            self.checked = res["checked"]
        rows = drift.rows_from_result(node, stage, name, res)
        if failed:
            cause = self.first_cause.get((node, stage))
            if cause and not any(k in res for k in ("drift", "findings", "mismatches")):
                # A stage that failed once on a node: its later failures follow from that cause.
                self.skipped.append({"node": node, "check": "%s: %s" % (stage, name), "reason": cause})
                return
            if cause is None and rows:
                self.first_cause[(node, stage)] = "after an earlier finding of the %s stage: %s" % (
                    stage, drift.cause_summary(rows[0]))
        self.rows.extend(rows)

    def _not_checked(self, node, task, res, skipped=False):
        self.skipped.extend(drift.not_checked(node, task.name or task.action, res, skipped))

    # -- the end ------------------------------------------------------------------------------------

    def v2_playbook_on_stats(self, stats):
        self._stats_hosts = sorted(stats.processed)
        self._stats_failed = [h for h in self._stats_hosts if stats.failures.get(h) or stats.dark.get(h)]
        # Not read: silent or unreachable. A node where a task failed (the verdict's run_once host) was read.
        self._stats_dark = [h for h in self._stats_hosts if stats.dark.get(h)]
        verdict = self.verdict or {"rows": self.rows, "counts": drift.counts(self.rows), "picture": None}
        rows = verdict["rows"]
        directory = self._report_dir()
        written = self._write(directory, rows, verdict["picture"], folded=self.verdict is not None)
        self._display.display("")
        if self.verdict is None:
            self._display.display("The run ended before the doctor's verdict: the rows below are as found, not "
                                  "folded into one per cause.", color="yellow")
        self._display.display(drift.table(rows), color="red" if drift.counts(rows)["error"] else "green")
        for line in drift.not_checked_lines(self.skipped):
            self._display.display(line)
        failed = self._stats_failed
        self._display.display("%d plays, %d nodes%s in %.0f s; report: %s" % (
            self.plays, len(self._nodes()), " (%s failed)" % ", ".join(failed) if failed else "",
            time.monotonic() - self.started, ", ".join(written)))

    def _nodes(self):
        """The cluster's nodes the run processed: the controller's own plays (the validation) run on localhost,
        which is none of them."""
        return [h for h in getattr(self, "_stats_hosts", None) or [] if h not in ("localhost", "127.0.0.1")]

    def _report_dir(self):
        return self.get_option("report_dir") or drift.report_dir()

    def _write(self, directory, rows, picture, folded=True):
        os.makedirs(directory, exist_ok=True)
        # folded: the rows are the verdict task's table (false when the run ended before it: the rows as found)
        data = drift.report(rows, {"folded": folded, "not_checked": drift.not_checked_list(self.skipped),
                                   "site": self.site, "checked": self.checked or {"nodes": [], "paths": []},
                                   "managed": sorted(self.managed, key=lambda m: (m["node"], m["stage"],
                                                                                  m.get("kind"), m.get("name"))),
                                   "picture": picture or {}})
        paths = []
        with open(os.path.join(directory, "doctor.json"), "w") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        paths.append(os.path.join(directory, "doctor.json"))
        with open(os.path.join(directory, "doctor.md"), "w") as handle:
            handle.write(drift.markdown(rows, not_checked=drift.not_checked_list(self.skipped)))
        paths.append(os.path.join(directory, "doctor.md"))
        paths.extend(self._picture(directory, picture))
        paths.extend(self._textfile(directory, rows))
        return paths

    def _textfile(self, directory, rows):
        """The verdict in Prometheus text format: doctor.prom beside the report, and in node_exporter's textfile
        folder when DS41F_TEXTFILE_DIR names one (docs/stages/verify.md)."""
        dark = getattr(self, "_stats_dark", None) or []
        text = textfile.render(textfile.doctor_metrics(drift.counts(rows), len(self._nodes()), len(dark), time.time()))
        written = [textfile.write(directory, "doctor.prom", text)]
        if os.environ.get("DS41F_TEXTFILE_DIR"):
            written.append(textfile.write(os.environ["DS41F_TEXTFILE_DIR"], "ds41f_doctor.prom", text))
        return written

    def _picture(self, directory, statuses):
        cluster = self.cluster()
        if cluster is None or statuses is None:
            return []
        picture = topology_picture.layout(cluster, statuses["nodes"], statuses["paths"])
        written = topology_picture.draw(picture, os.path.join(directory, "topology.svg"))
        if self.get_option("png"):
            try:
                written += topology_picture.draw(picture, None, os.path.join(directory, "topology.png"))
            except ImportError as exc:  # only the PNG needs matplotlib
                self._display.warning("topology.png not drawn: %s. Fix: pip install matplotlib" % exc)
        return written
