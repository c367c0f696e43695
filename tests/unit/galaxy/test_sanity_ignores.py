"""Every ansible-test sanity ignore entry (tests/sanity/ignore-<core>.txt, which Galaxy's importer notes) says why it
cannot be fixed instead, with a link to the upstream reason. Which kinds may be ignored at all is ansible-lint's
sanity rule (make lint), as Red Hat certification applies it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENTRY = re.compile(r"^\S+ \S+  # .*\w.* https://\S+$")


@pytest.mark.parametrize("ignore_file", sorted((ROOT / "tests" / "sanity").glob("ignore-*.txt")), ids=lambda p: p.name)
def test_every_entry_has_a_reason_and_its_link(ignore_file):
    lines = ignore_file.read_text().splitlines()
    assert lines
    for number, line in enumerate(lines, 1):
        assert ENTRY.match(line), "%s:%d: write PATH TEST  # REASON: https://..." % (ignore_file.name, number)
