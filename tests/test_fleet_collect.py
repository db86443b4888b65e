"""`fleet collect`: argv built exactly, recorded srun/pdsh output split per node, hostile
names refused or made safe, documents written atomically. The real runs through Slurm and
ssh/pdsh are in test_fleet_collect_slurm.py and test_fleet_collect_ssh.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fwdoctor.fleet import collect as fc

DATA = Path(__file__).parent / "data" / "fleet-collect"


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- argv
def test_srun_argv_is_a_list_with_our_options_first_and_the_users_before_the_double_dash():
    argv = fc.slurm_argv("/opt/venv/bin/fwdoctor", "facts", ["-N", "32", "-p", "gpu"], srun="/usr/bin/srun")
    assert argv == ["/usr/bin/srun", "--label", "--verbose", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
                    "-N", "32", "-p", "gpu", "--", "/opt/venv/bin/fwdoctor", "facts"]
    smoke = fc.slurm_argv("fwdoctor", "smoke", [], srun="srun")
    assert smoke[-5:] == ["--", "fwdoctor", "smoke", "all", "--json"]


def test_a_second_double_dash_in_the_srun_options_is_refused():
    with pytest.raises(fc.CollectError, match="second '--'"):
        fc.slurm_argv("fwdoctor", "facts", ["-N", "2", "--", "rm"])


def test_an_fwdoctor_command_that_looks_like_an_option_is_refused():
    for bad in ("-oProxyCommand=x", "", " fwdoctor", "fw\x00doctor"):
        with pytest.raises(fc.CollectError, match="--fwdoctor"):
            fc.node_argv(bad, "facts")


def test_ssh_argv_puts_batch_mode_first_and_double_dash_before_the_host():
    command = fc.remote_command("/opt/my tools/fwdoctor", "facts")
    assert command == "'/opt/my tools/fwdoctor' facts"  # one string for the remote shell, quoted
    argv = fc.ssh_argv("admin@node-01.cluster", command, ["-p", "2222"], connect_timeout=7, ssh="/usr/bin/ssh")
    assert argv == ["/usr/bin/ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "-p", "2222",
                    "--", "admin@node-01.cluster", "'/opt/my tools/fwdoctor' facts"]


def test_pdsh_argv_and_its_ssh_options_go_through_the_environment_without_a_shell():
    argv = fc.pdsh_argv(["node1", "admin@node2"], "fwdoctor facts", fanout=16, hosts_file="/tmp/h.txt", pdsh="/usr/bin/pdsh")
    # The hosts without a user come from the file (-w ^FILE); a user@host has its own -w.
    assert argv == ["/usr/bin/pdsh", "-R", "ssh", "-S", "-f", "16", "-w", "^/tmp/h.txt", "-w", "admin@node2", "--", "fwdoctor facts"]
    assert fc.pdsh_env(["-p", "2222"], 5) == {"PDSH_SSH_ARGS_APPEND": "-o BatchMode=yes -o ConnectTimeout=5 -p 2222"}
    with pytest.raises(fc.CollectError, match="white space"):
        fc.pdsh_env(["-o", "ProxyCommand=nc %h 22"], 5)


# --------------------------------------------------------------------------- hostile names
@pytest.mark.parametrize("bad", [
    "-oProxyCommand=touch /tmp/pwned", "../x", "node/../../etc", "a b", "node;reboot", "$(id)", "`id`",
    "node1,node2", "node[1-4]", "user@-oFoo", "", "node\n2", "-", "a..b", "node:22",
])
def test_hostile_host_names_are_refused(bad):
    with pytest.raises(fc.CollectError):
        fc.validate_host(bad)


@pytest.mark.parametrize("good", ["node-01", "gpu017.cluster.example", "10.0.3.17", "admin@node-01", "n_1"])
def test_ordinary_host_names_are_taken(good):
    assert fc.validate_host(good) == good


def test_a_hosts_file_is_read_with_comments_and_a_bad_line_is_named():
    assert fc.parse_hosts_file("# rack 1\nnode1\n\nnode2  # spare\nnode1\n", "--hosts h.txt") == ["node1", "node2"]
    with pytest.raises(fc.CollectError, match=r"--hosts h.txt line 2: host '-oProxyCommand=x'"):
        fc.parse_hosts_file("node1\n-oProxyCommand=x\n", "--hosts h.txt")
    with pytest.raises(fc.CollectError, match="no host"):
        fc.parse_hosts_file("# nothing\n\n", "--hosts h.txt")


@pytest.mark.parametrize("node, name", [
    ("../x", "_x"), ("../../etc/passwd", "_.._etc_passwd"), ("-oProxyCommand=x", "oProxyCommand_x"),
    (".hidden", "hidden"), ("", "node"), ("..", "node"), ("node 1", "node_1"), ("gpu017.cluster", "gpu017.cluster"),
    ("n\u00e9", "n_"), ("a" * 300, "a" * 200),
])
def test_node_names_become_plain_file_names(node, name):
    assert fc.file_name_for(node) == name
    assert "/" not in name and not name.startswith((".", "-"))


# --------------------------------------------------------------------------- srun output
def test_recorded_srun_output_is_split_per_task_with_long_lines_rejoined_and_the_failed_task_named():
    results, srun_lines = fc.parse_slurm_output(_read("srun-two-tasks.stdout"), _read("srun-two-tasks.stderr"), "facts")
    assert [(r.node, r.ok, r.exit_code) for r in results] == [("vm", True, 0), ("vm", False, 2)]
    # task 0's 1,600-byte line came as two labelled pieces: joined, it is the document again
    assert results[0].document["facts"]["pad"]["value"] == "x" * 1500
    assert results[1].problem == "exit status 2; no JSON document on stdout (it printed nothing)"
    assert results[1].stderr_tail == ["boom: no torch here"]
    assert srun_lines == []  # srun's per-task verdicts went to the tasks, nothing else went wrong


def test_task_lists_in_slurms_ranged_form_are_expanded():
    assert fc.task_ids("0") == [0]
    assert fc.task_ids("[0-3]") == [0, 1, 2, 3]
    assert fc.task_ids("[0,4-5]") == [0, 4, 5]


def test_without_srun_verbose_lines_a_task_is_named_by_its_documents_host_else_by_its_number():
    stdout = '0: {"kind": "facts", "host": {"name": "gpu7", "source": "x"}, "facts": {}}\n1: {"kind": "facts", "facts": {}}\n'
    results, _ = fc.parse_slurm_output(stdout, "", "facts")
    assert [r.node for r in results] == ["gpu7", "task-1"]


def test_a_task_killed_by_a_signal_is_failed_even_when_it_had_printed_something():
    stderr = "srun: launching StepId=3.0 on host n1, 1 tasks: 0\nsrun: error: n1: task 0: Killed\n"
    results, _ = fc.parse_slurm_output('0: {"kind": "facts", "facts": {}}\n', stderr, "facts")
    assert results[0].node == "n1" and not results[0].ok and results[0].problem == "Killed"


def test_a_smoke_report_with_exit_status_1_is_still_the_nodes_answer():
    stderr = "srun: launching StepId=3.0 on host n1, 1 tasks: 0\nsrun: error: n1: task 0: Exited with exit code 1\n"
    results, _ = fc.parse_slurm_output('0: {"kind": "smoke-suite", "ok": false}\n', stderr, "smoke")
    assert results[0].ok and results[0].exit_code == 1
    results, _ = fc.parse_slurm_output('0: {"kind": "facts"}\n', stderr, "facts")
    assert not results[0].ok and results[0].problem == "exit status 1"


def test_a_document_of_another_kind_is_not_taken_for_facts():
    doc, problem = fc.document_from_text('{"kind": "check"}', "facts")
    assert doc is None and problem == "stdout is a JSON document of kind 'check', not 'facts'"
    assert fc.document_from_text("Traceback (most recent call last):", "facts")[1].startswith("no JSON document")


# --------------------------------------------------------------------------- pdsh output
def test_recorded_pdsh_output_is_split_per_host_and_the_unreachable_one_named():
    hosts = ["localhost", "127.0.0.1", "nosuchhost.invalid"]
    results = fc.parse_pdsh_output(_read("pdsh-three-hosts.stdout"), _read("pdsh-three-hosts.stderr"), hosts, "facts")
    assert [(r.node, r.ok) for r in results] == [("localhost", True), ("127.0.0.1", True), ("nosuchhost.invalid", False)]
    assert results[0].document["facts"]["pad"]["value"] == "y" * 1500
    assert results[2].exit_code == 255
    assert "Could not resolve hostname nosuchhost.invalid" in results[2].stderr_tail[0]


def test_pdsh_printing_a_host_by_its_first_label_is_still_matched():
    hosts = ["localhost", "nosuchhost.invalid"]
    results = fc.parse_pdsh_output(_read("pdsh-short-label.stdout"), _read("pdsh-short-label.stderr"), hosts, "facts")
    assert [(r.node, r.ok, r.exit_code) for r in results] == [("localhost", True, 0), ("nosuchhost.invalid", False, 255)]
    assert fc.pdsh_labels(["a.x", "a.y", "10.0.0.1"]) == {"a.x": "a.x", "a.y": "a.y", "10.0.0.1": "10.0.0.1"}


# --------------------------------------------------------------------------- writing
def test_documents_are_written_one_file_per_node_with_hostile_and_clashing_names_made_safe(tmp_path):
    results = [
        fc.NodeResult(node="../evil", document={"kind": "facts", "n": 1}),
        fc.NodeResult(node="_evil", document={"kind": "facts", "n": 2}),
        fc.NodeResult(node="-oProxyCommand=x", document={"kind": "facts", "n": 3}),
        fc.NodeResult(node="down", problem="exit status 2"),
    ]
    fc.write_documents(results, str(tmp_path), "facts")
    assert sorted(os.listdir(tmp_path)) == ["_evil-2.json", "_evil.json", "oProxyCommand_x.json"]
    assert json.loads((tmp_path / "_evil.json").read_text())["n"] == 1
    assert results[3].path is None
    assert not (tmp_path.parent / "evil.json").exists()


def test_a_smoke_report_gets_its_own_suffix_and_a_rewrite_replaces_the_file_whole(tmp_path):
    (tmp_path / "n1.smoke.json").write_text("old")
    fc.write_documents([fc.NodeResult(node="n1", document={"kind": "smoke-suite"})], str(tmp_path), "smoke")
    assert json.loads((tmp_path / "n1.smoke.json").read_text()) == {"kind": "smoke-suite"}
    assert os.listdir(tmp_path) == ["n1.smoke.json"]  # no temporary file left


def test_the_default_fwdoctor_is_the_console_script_beside_this_interpreter(tmp_path):
    script = tmp_path / "bin" / "fwdoctor"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert fc.default_fwdoctor(argv0="/usr/lib/python3/pytest", executable=str(tmp_path / "bin" / "python")) == str(script)
    assert fc.default_fwdoctor(argv0=str(script), executable="/nowhere/python") == str(script)
    assert fc.default_fwdoctor(argv0="pytest", executable="/nowhere/python") == "fwdoctor"


# --------------------------------------------------------------------------- CLI
def test_collect_needs_exactly_one_mode(cli):
    result = cli("fleet", "collect")
    assert result.exit_code == 2 and "give exactly one of --slurm, --hosts FILE, --local" in result.output
    result = cli("fleet", "collect", "--slurm", "--local")
    assert result.exit_code == 2 and "(got --slurm, --local)" in result.output


def test_a_hosts_file_with_a_hostile_line_is_refused_before_anything_runs(cli, tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("node1\n-oProxyCommand=touch /tmp/x\n")
    result = cli("fleet", "collect", "--hosts", str(hosts), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"--hosts {hosts} line 2: host '-oProxyCommand=touch /tmp/x': not a host name" in result.output
    assert not (tmp_path / "out").exists()


def test_a_hosts_file_that_is_not_a_regular_file_is_refused(cli, tmp_path):
    result = cli("fleet", "collect", "--hosts", "/dev/zero")
    assert result.exit_code == 2 and "--hosts /dev/zero" in result.output


def test_bad_timeouts_and_out_paths_are_exit_2(cli, tmp_path):
    assert cli("fleet", "collect", "--slurm", "--timeout", "nan").exit_code == 2
    assert cli("fleet", "collect", "--slurm", "--timeout", "-1").exit_code == 2
    afile = tmp_path / "f"
    afile.write_text("")
    hosts = tmp_path / "hosts"
    hosts.write_text("node1\n")
    result = cli("fleet", "collect", "--hosts", str(hosts), "--out", str(afile))
    assert result.exit_code == 2 and "is a file" in result.output
    assert cli("fleet", "collect", "--slurm", "--node-name", "x").exit_code == 2
