# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""A systemd time span in whole seconds (forms/systemd.py parses it as systemd does)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import systemd


def span_seconds(value):
    """Whole seconds of a finite systemd time span (a part of a second counts as one): what a program's config or a
    task's timeout takes of a span that a unit file takes as it is."""
    problem = systemd.span_problem(value)
    if problem:
        raise AnsibleFilterError("span_seconds: %r %s Fix: %s" % (value, problem[0], problem[1]))
    return -(-systemd.parse_span(value) // 1000000)


class FilterModule:
    def filters(self):
        return {"span_seconds": span_seconds}
