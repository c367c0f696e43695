"""Every changelog fragment is YAML that antsibull-changelog, ansible-lint and Galaxy's importer can load: a mapping
of known sections to lists of text (a ": " inside an unquoted item once broke all three in CI, not the unit tests)."""

from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

FRAGMENTS = sorted((Path(ROOT) / "changelogs" / "fragments").glob("*.y*ml"))
CONFIG = yaml.safe_load((Path(ROOT) / "changelogs" / "config.yaml").read_text())
# antsibull-changelog's sections: the config's, its trivial one, and the release summary (one text, not a list)
SECTIONS = {name for name, _ in CONFIG["sections"]} | {CONFIG.get("trivial_section_name", "trivial")}
SUMMARY = CONFIG.get("prelude_section_name", "release_summary")


def test_there_are_fragments_to_check():
    assert FRAGMENTS


@pytest.mark.parametrize("fragment", FRAGMENTS, ids=lambda p: p.name)
def test_a_fragment_is_a_mapping_of_known_sections_to_lists_of_text(fragment):
    data = yaml.safe_load(fragment.read_text())
    assert isinstance(data, dict) and data, fragment.name
    for section, items in data.items():
        if section == SUMMARY:
            assert isinstance(items, str) and items.strip(), fragment.name
            continue
        assert section in SECTIONS, "%s: unknown section %s" % (fragment.name, section)
        assert isinstance(items, list) and all(isinstance(i, str) and i.strip() for i in items), (fragment.name,
                                                                                                  section)
