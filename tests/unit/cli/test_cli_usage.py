"""The ds41f command's usage: --version, exit statuses in --help, bad usage exits 2."""

import pytest

import ds41f
from ds41f import cli, paths


def test_version_names_ds41f_and_ansible_core(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("ds41f %s (collection dgxspark.ds41f, ansible-core " % ds41f.__version__)


def test_help_documents_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for line in ("  0      ok", "  1      a check found errors", "  2      bad usage or input",
                 "  other  ds41f run passes ansible-playbook's own status through unchanged"):
        assert line in out


def test_double_dash_is_refused_where_no_playbook_runs(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["picture", "inventories/ring4", "/tmp/x", "--", "-v"])
    assert done.value.code == 2
    assert "takes no ansible-playbook flags" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["status", "logs", "render"])
def test_day2_commands_without_a_lab_say_how_to_get_one(monkeypatch, tmp_path, capsys, command):
    monkeypatch.setattr(paths, "LAB_STATE", tmp_path)
    with pytest.raises(SystemExit) as done:
        cli.main([command])
    assert done.value.code == 2
    assert "ds41f %s: no inventory given and no lab 'lab' is up. Fix: -i inventories/<site>" % command in \
        capsys.readouterr().err


def test_a_day2_playbook_is_not_a_stage():
    assert "status" not in cli.stages() and "render" not in cli.stages() and "logs" not in cli.stages()
    assert (paths.PLAYBOOKS / "day2" / "status.yml").is_file()


def test_render_reads_no_node_and_renders_every_rank_of_an_example_site(capsys):
    # inventories/ring4 holds a real cluster's addresses: render never opens a connection to them.
    assert cli.main(["render", "-i", "inventories/ring4", "--one-line"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out if line.startswith("#")] == ["# dgx1", "# dgx2", "# dgx3", "# dgx4"]
    commands = [line for line in out if line.startswith("docker run ")]
    assert len(commands) == 4
    assert "--node-rank 0" in commands[0] and "--headless" not in commands[0]
    assert "--node-rank 3" in commands[3] and "--headless" in commands[3]
    assert "--env-file /etc/ds41f/serve/api-key.env" in commands[0]
    assert "api-key.env" not in commands[1]


def test_render_refuses_a_bad_recipe_with_the_field_and_exit_2(capsys):
    # what follows `--` reaches the day-2 playbook too: here an empty image, which the launch spec refuses
    assert cli.main(["render", "-i", "inventories/ring4", "dgx1", "--", "-e", '{"serve_image": ""}']) == 2
    err = capsys.readouterr().err
    assert "dgx1: Render the launch:" in err and "serve_image: is empty. Fix: set it in group_vars/all/serve.yml" in err


def test_render_compare_sets_every_rank_beside_the_recorded_launch_and_exits_1_on_an_unreviewed_one(capsys):
    # the example ring as it is: every difference reviewed, exit 0
    assert cli.main(["render", "-i", "inventories/ring4", "--compare"]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.startswith("# dgx")]
    assert [h.split(":")[0] for h in heads] == ["# dgx1", "# dgx2", "# dgx3", "# dgx4"]
    assert all("tp4-ring" in h and " 0 not reviewed" in h for h in heads)
    assert "[1] " in out and "every difference is reviewed" in out
    # the recipe without the release's multimodal cache setting: that item is named and the exit is 1
    args = '{"serve_args": ["--dtype", "bfloat16", "--load-format", "direct"]}'
    assert cli.main(["render", "-i", "inventories/ring4", "dgx1", "--compare", "--", "-e", args]) == 1
    out = capsys.readouterr().out
    assert "NOT REVIEWED arg --mm-processor-cache-gb: recorded 0, rendered (absent)" in out
