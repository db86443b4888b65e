"""`check --format prometheus` (issue 14, item 4): node_exporter textfile metrics, parsed by
the official client's parser (prometheus_client.parser), on fixture roots, facts files and
the live host; hostile label values from an inspected root or facts file stay inside their
label."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import socket
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fwdoctor import __version__
from fwdoctor.render.prometheus import escape_label_value

ROOTS = Path(__file__).resolve().parent / "roots"
FAMILIES = ["fwdoctor_finding", "fwdoctor_findings", "fwdoctor_checks", "fwdoctor_check_not_run", "fwdoctor_version_info",
            "fwdoctor_info", "fwdoctor_check_exit_code", "fwdoctor_check_timestamp_seconds", "fwdoctor_facts_collected_timestamp_seconds"]


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{family: [(labels, value)]}; every family a gauge, every sample named as its family."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation, family.name
        assert family.name not in out, f"{family.name} declared twice"
        out[family.name] = []
        for sample in family.samples:
            assert sample.name == family.name and sample.timestamp is None  # the textfile collector rejects timestamps
            out[family.name].append((dict(sample.labels), sample.value))
    return out


def labelsets(samples) -> list[frozenset]:
    sets = [frozenset(labels.items()) for labels, _ in samples]
    assert len(sets) == len(set(sets)), "a label set repeats: node_exporter refuses the file"
    return sets


def run(cli, *args: str) -> tuple[int, dict, str]:
    result = cli("check", "--format", "prometheus", *args)
    return result.exit_code, parse(result.stdout), result.stdout


def root_args(name: str) -> list[str]:
    env = ROOTS / name / "fixture.env"
    return ["--root", str(ROOTS / name), *(["--env-file", str(env)] if env.exists() else [])]


def _epoch(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp()


# ----------------------------------------------------------------------------- exact series
def test_a_root_with_an_error_gives_exactly_these_series(cli, use_test_kb):
    code, fams, _ = run(cli, *root_args("torch-driver-too-old"))
    assert code == 1  # the exit status is check's, whatever the format
    assert list(fams) == FAMILIES
    assert fams["fwdoctor_finding"] == [
        ({"id": "driver-too-old-for-torch", "code": "FWD104", "severity": "error", "area": "driver"}, 1.0),
        ({"id": "toolkit-missing", "code": "FWD201", "severity": "info", "area": "toolkit"}, 1.0),
    ]
    assert fams["fwdoctor_findings"] == [({"severity": "error"}, 1.0), ({"severity": "warning"}, 0.0), ({"severity": "info"}, 1.0)]
    assert fams["fwdoctor_version_info"] == [
        ({"component": "driver", "version": "515.76", "source": ""}, 1.0),
        ({"component": "torch", "version": "2.14.1+cu130", "source": ""}, 1.0),
        ({"component": "torch_cuda", "version": "13.0", "source": ""}, 1.0),
    ]
    assert fams["fwdoctor_info"] == [({"fwdoctor": __version__, "host": ""}, 1.0)]  # the root has no /etc/hostname
    assert fams["fwdoctor_check_exit_code"] == [({}, 1.0)]


@pytest.mark.parametrize("root", ["torch-driver-too-old", "libs-nccl-header-mismatch", "toolkit-two", "fabric-ib-xid", "python-env-mismatch", "driver-missing"])
def test_series_match_the_json_report_of_the_same_root(cli, use_test_kb, root):
    code, fams, _ = run(cli, *root_args(root))
    doc = json.loads(cli("check", "--json", *root_args(root)).stdout)
    assert code == doc["exit_code"]
    counted: dict[tuple, int] = {}
    for f in doc["findings"]:
        key = (f["id"], f["code"], f["severity"], f["area"])
        counted[key] = counted.get(key, 0) + 1
    labelsets(fams["fwdoctor_finding"])
    assert {(l["id"], l["code"], l["severity"], l["area"]): v for l, v in fams["fwdoctor_finding"]} == counted
    by_severity = {l["severity"]: v for l, v in fams["fwdoctor_findings"]}
    assert by_severity == {s: sum(1 for f in doc["findings"] if f["severity"] == s) for s in ("error", "warning", "info")}
    assert {l["rule"]: l["area"] for l, _ in fams["fwdoctor_check_not_run"]} == {n["rule"]: n["area"] for n in doc["not_checked"]}
    assert dict((l["state"], v) for l, v in fams["fwdoctor_checks"]) == {"run": doc["checked"], "not_run": doc["not_run"]}
    labelsets(fams["fwdoctor_version_info"])


def test_nccl_and_cudnn_installs_are_version_series_with_their_kind(cli, use_test_kb):
    _, fams, _ = run(cli, *root_args("libs-nccl-header-match"))
    assert fams["fwdoctor_version_info"] == [({"component": "nccl", "version": "2.30.7", "source": "system"}, 1.0)]
    _, fams, _ = run(cli, *root_args("libs-cudnn-header-match"))
    assert [l["component"] for l, _ in fams["fwdoctor_version_info"]] == ["cudnn"]


def test_the_live_host_parses_and_names_itself(cli):
    before = dt.datetime.now(dt.timezone.utc).timestamp() // 1
    code, fams, _ = run(cli)
    assert code in (0, 1)
    assert fams["fwdoctor_info"] == [({"fwdoctor": __version__, "host": socket.gethostname()}, 1.0)]
    ((_, stamp),) = fams["fwdoctor_check_timestamp_seconds"]
    assert before <= stamp <= dt.datetime.now(dt.timezone.utc).timestamp()
    assert sum(v for _, v in fams["fwdoctor_findings"]) == sum(v for _, v in fams["fwdoctor_finding"])
    # this machine's CUDA 13.0 toolkit at /usr/local/cuda shows as a version series
    if Path("/usr/local/cuda/bin/nvcc").exists():
        assert "cuda_toolkit" in {l["component"] for l, _ in fams["fwdoctor_version_info"]}


def test_a_facts_file_keeps_its_collection_time_beside_the_check_time(cli, use_test_kb, tmp_path):
    saved = json.loads(cli("facts", *root_args("torch-driver-too-old")).stdout)
    saved["collected_at"] = "2026-01-02T03:04:05Z"
    saved["host"] = {"name": "node-0417", "source": "gethostname()"}
    path = tmp_path / "node.json"
    path.write_text(json.dumps(saved))
    _, fams, _ = run(cli, "--facts", str(path))
    assert fams["fwdoctor_facts_collected_timestamp_seconds"] == [({}, _epoch("2026-01-02T03:04:05Z"))]
    assert fams["fwdoctor_check_timestamp_seconds"][0][1] > _epoch("2026-01-02T03:04:05Z")
    assert fams["fwdoctor_info"][0][0]["host"] == "node-0417"


def test_an_old_facts_file_has_no_collection_time_series(cli, use_test_kb, tmp_path):
    saved = json.loads(cli("facts", *root_args("torch-driver-too-old")).stdout)
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"facts": saved["facts"], "probe_failures": []}))
    _, fams, _ = run(cli, "--facts", str(path))
    assert "fwdoctor_facts_collected_timestamp_seconds" not in fams and "fwdoctor_check_timestamp_seconds" in fams


def test_a_finding_that_fires_twice_is_one_series_with_value_2(cli, tmp_path):
    path = tmp_path / "two-failures.json"
    path.write_text(json.dumps({"facts": {"driver.loaded": {"value": False, "source": "/proc/modules"}},
                                "probe_failures": [{"probe": "nvml", "reason": "timed out"}, {"probe": "gpus", "reason": "timed out"}]}))
    _, fams, _ = run(cli, "--facts", str(path))
    assert [(l["id"], v) for l, v in fams["fwdoctor_finding"] if l["id"] == "probe-failed"] == [("probe-failed", 2.0)]
    labelsets(fams["fwdoctor_finding"])


# ----------------------------------------------------------------------------- hostile values
def test_label_escaping_follows_the_exposition_format():
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_label_value("cr\rnul\x00del\x7f") == "cr\ufffdnul\ufffddel\ufffd"
    assert escape_label_value("\udcff") == "\\\\xff"  # a non-UTF-8 byte, written as text (fwdoctor.schema.utf8_text)


def test_hostile_values_in_a_root_stay_inside_their_labels(cli, use_test_kb, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "toolkit-clean", root, symlinks=True)
    (root / "etc").mkdir()
    name = 'node\\"}{x="\\ 1'
    (root / "etc" / "hostname").write_text(name + "\n")
    version_py = root / "opt/venv/lib/python3.11/site-packages/torch/version.py"
    evil = '2.14.1"} 1\\nfwdoctor_injected{a="\\'
    version_py.write_text(version_py.read_text().replace("'2.14.1+cu130'", f"'{evil}'"))
    args = ["--root", str(root), "--env-file", str(root / "fixture.env")]
    facts = json.loads(cli("facts", *args).stdout)
    assert facts["facts"]["torch.version"]["value"] == evil  # the probe reads it verbatim
    _, fams, text = run(cli, *args)
    assert "fwdoctor_injected" not in fams
    assert fams["fwdoctor_info"][0][0]["host"] == name
    assert {l["component"]: l["version"] for l, _ in fams["fwdoctor_version_info"]}["torch"] == evil
    assert len(text.splitlines()) == sum(len(s) + 2 for s in fams.values())  # HELP, TYPE, one line per sample


def test_newlines_and_control_characters_from_a_facts_file_cannot_break_a_line(cli, tmp_path):
    evil = 'x"} 1\nfwdoctor_injected{a="b"} 1\n# TYPE fwdoctor_injected counter\n'
    path = tmp_path / "evil.json"
    path.write_text(json.dumps({
        "host": {"name": "n\r\n\x00\\", "source": "gethostname()"}, "collected_at": "2026-01-02T03:04:05Z",
        "facts": {"driver.version": {"value": evil, "source": "x"}, "torch.version": {"value": "2.0\\", "source": "x"},
                  "nccl.installs": {"value": [{"kind": 'pip"\n', "header_version": "2.30.7\n"}], "source": "x"}},
        "probe_failures": [{"probe": "nvml", "reason": "x"}]}))
    _, fams, text = run(cli, "--facts", str(path))
    assert "fwdoctor_injected" not in fams
    versions = {l["component"]: l for l, _ in fams["fwdoctor_version_info"]}
    assert versions["driver"]["version"] == evil and versions["torch"]["version"] == "2.0\\"
    assert versions["nccl"] == {"component": "nccl", "version": "2.30.7\n", "source": 'pip"\n'}
    assert fams["fwdoctor_info"][0][0]["host"] == "n\ufffd\n\ufffd\\"  # CR and NUL replaced, LF escaped
    assert len(text.splitlines()) == sum(len(s) + 2 for s in fams.values())


# ----------------------------------------------------------------------------- help
def test_check_help_says_how_to_feed_the_textfile_collector(cli):
    text = " ".join(cli("check", "--help").output.split())
    assert "prometheus" in text and "textfile" in text and "--collector.textfile.directory" in text
    assert "f=DIR/fwdoctor.prom.$$; fwdoctor check --format prometheus > $f" in text  # a temporary file,
    assert "[ -s $f ] && mv $f DIR/fwdoctor.prom || rm -f $f" in text  # renamed when the run wrote metrics


def _help_recipe(cli) -> list[str]:
    lines = cli("check", "--help").output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("f=DIR/fwdoctor.prom.$$"))
    return [lines[start].strip(), lines[start + 1].strip()]


def test_the_help_recipe_run_by_bash_replaces_the_file_only_when_metrics_were_written(cli, use_test_kb, tmp_path):
    import subprocess
    import sys

    recipe = _help_recipe(cli)
    folder = tmp_path / "textfile"
    folder.mkdir()

    def run_recipe(*args: str) -> None:
        fwdoctor = " ".join([sys.executable, "-m", "fwdoctor", "check", "--format", "prometheus", *args])
        script = "\n".join(recipe).replace("DIR", str(folder)).replace("fwdoctor check --format prometheus", fwdoctor)
        subprocess.run(["bash", "-c", script], check=False, capture_output=True, timeout=120)

    run_recipe(*root_args("torch-driver-too-old"))  # exit 1: error findings, metrics still written
    assert [p.name for p in folder.iterdir()] == ["fwdoctor.prom"]
    fams = parse((folder / "fwdoctor.prom").read_text())
    assert fams["fwdoctor_check_exit_code"] == [({}, 1.0)]
    run_recipe("--facts", str(tmp_path / "missing.json"))  # fails outright: nothing written, the old file stays
    assert [p.name for p in folder.iterdir()] == ["fwdoctor.prom"]
    assert parse((folder / "fwdoctor.prom").read_text()) == fams
