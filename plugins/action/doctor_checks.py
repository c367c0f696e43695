# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's live checks, on the controller: every node's live readings against the model and recipe."""

from __future__ import annotations

import os

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import exposure, firewall, live_checks, nccl, proxy
from ansible_collections.dgxspark.ds41f.plugins.module_utils.plain import host_fact, plain
from ansible_collections.dgxspark.ds41f.plugins.modules import doctor_checks as module_doc


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    @staticmethod
    def _exposure(hosts, hostvars, wanted, unchecked):
        """Every port each node listens on beyond loopback, tried from here: only SSH, and the API on the head,
        may accept (``wanted``: ssh_port, api_port); with TLS (``wanted``: tls_certificate, proxy_dir), the API
        presents the site's certificate."""
        if not wanted:
            return []
        targets, allowed = {}, {}
        for host, found in hosts.items():
            ports = found["live"].get("listeners")
            if ports is None:
                unchecked.append({"node": host, "check": "ports open to the controller",
                                  "reason": "its listening ports were not read"})
                continue
            hv = hostvars[host]
            targets[host] = (hv.get("ansible_host") or host, sorted({port for _, port in ports}))
            allowed[host] = {int(wanted["ssh_port"])} | ({int(wanted["api_port"])} if hv.get("spark_is_head")
                                                         else set())
        opened = exposure.probe(targets)
        rows = exposure.findings(opened, allowed, ("nft_table", firewall.TABLE))
        head = next((h for h in targets if hostvars[h].get("spark_is_head")), None)
        if wanted.get("tls_certificate") and head:
            from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls  # cryptography: only with TLS

            port = int(wanted["api_port"])
            found, skipped = tls.findings(head, targets[head][0], port, wanted["tls_certificate"], os.path.join(
                wanted["proxy_dir"], proxy.TLS_CERTIFICATE), opened.get((head, port), False))
            rows += found
            unchecked.extend(skipped)
        return rows

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, validated = self.validate_argument_spec(argument_spec=checks.doc_spec(module_doc.DOCUMENTATION,
                                                                                 yaml.safe_load))
        args = self._task.args
        live_var = args.get("live", "verify_live")
        hostvars = task_vars["hostvars"]
        hosts, missing = {}, []
        for host in task_vars["ansible_play_hosts_all"]:
            registered = plain(hostvars[host].get(live_var))
            if not registered or "live" not in registered:
                missing.append(host)
                continue
            hosts[host] = {"live": registered["live"], "node": host_fact(hostvars[host], "ds41f_node") or {}}
        if not hosts:
            result.update(failed=True, msg="no %s reading for %s. Fix: run dgxspark.ds41f.live_state on every node "
                          "first (register: %s)." % (live_var, ", ".join(sorted(missing)), live_var))
            return result
        # A container's env is compared with the NCCL env file as the recipe renders it for its node, never with
        # the node's copy, which may itself have drifted (that drift is the fabric stage's row, and its fix).
        nccl_file = args.get("nccl_env_file") or ""
        if nccl_file:
            live_checks.env_files_from_recipe(hosts, nccl_file, {host: nccl.environment(
                plain(hv["spark_shape"])["fabric"], plain(hv["spark_nccl_hcas"]), plain(hv["spark_gid_index"]),
                hv["spark_management_interface"], plain(hv["fabric_nccl_env_common"]),
                plain(hv["fabric_nccl_env_direct"]), plain(hv["fabric_nccl_env_ring"]))
                for host, hv in ((host, hostvars[host]) for host in hosts)})
        # A node whose reading failed is not checked; the others are still judged.
        unchecked = [{"node": n, "check": "live checks", "reason": "its live_state reading failed or did not run"}
                     for n in sorted(missing)]
        first = hostvars[sorted(hosts)[0]]
        head = next((h for h in hosts if hostvars[h].get("spark_is_head")), None)
        cables = plain(first["spark_cables"])
        findings = live_checks.evaluate(
            hosts, cables, int(first["spark_mtu"]),
            float(args.get("startup_gib", 5)), float(args.get("steady_gib", 3)),
            args.get("serve_fix", "ds41f run serve -e '{\"serve_replace\": true}'"),
            list(args.get("ignore_env", ["VLLM_API_KEY"])), head=head, guard_unit=args.get("guard_unit") or "",
            served_names=list(args.get("served_names") or []), unchecked=unchecked)
        findings += self._exposure(hosts, hostvars, plain(args.get("exposure")) or {}, unchecked)
        paths = [c["cidr"] for c in cables if c["a"] in hosts and (c["b"] == "switch" or c["b"] in hosts)]
        result.update(changed=False, findings=findings, nodes=sorted(hosts), skipped_checks=unchecked,
                      checked={"nodes": sorted(hosts), "paths": sorted(set(paths))},
                      msg="live checks: %d finding(s) on %d nodes" % (len(findings), len(hosts)))
        errors = [f for f in findings if f.get("severity") == "error"]
        if errors and validated["fail_on_error"]:
            result.update(failed=True, msg="%d error(s):\n%s" % (len(errors), "\n".join(
                "- %s %s: expected %s, found %s. Fix: %s" % (f["node"], f["setting"], f["expected"], f["found"],
                                                             f["fix"]) for f in errors)))
        elif not errors:
            result["msg"] = "live checks: no errors (%d finding(s) in all, on %d nodes)" % (len(findings), len(hosts))
        return result
