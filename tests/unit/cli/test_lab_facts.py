"""A new lab forgets the facts cached for the machines before it, but keeps the cache's folder: the ansible-playbook
that runs `ds41f lab up` (molecule's create) opened it at its start and writes its own facts there afterwards."""

from ds41f.lab import cluster


def test_new_machines_empty_the_fact_cache_and_keep_its_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster.paths, "LAB_STATE", tmp_path)
    lab = cluster.Lab("x")
    facts = lab.state / "facts"
    (facts / "sub").mkdir(parents=True)
    (facts / "dgx1").write_text("{}")
    (facts / "sub" / "f").write_text("{}")
    lab.forget_facts()
    assert facts.is_dir() and list(facts.iterdir()) == []
    cluster.Lab("none").forget_facts()  # no cache yet: nothing to do
    assert not (tmp_path / "none").exists()
