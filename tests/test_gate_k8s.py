"""`fleet emit k8s --gate` (issue 27, item 3): every document validated against Kubernetes'
own schemas (kubernetes-validate, strict: an unknown field fails), and the NPD plugin config
against the rules NPD itself applies when it loads one (kubernetes/node-problem-detector
pkg/custompluginmonitor/types/config.go and types.go at commit 01a6793b: the JSON field
names, plugin "custom", Go durations, rule timeout <= global timeout, an existing rule path,
a default condition for every permanent rule)."""

from __future__ import annotations

import json
import re

import kubernetes_validate
import pytest
import yaml

from fwdoctor.fleet import npd
from fwdoctor.fleet.k8s import ManifestError

K8S_VERSION = "1.33"  # a release every supported cluster serves apps/v1, rbac/v1 and v1 alike
_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
GLOBAL_KEYS = {"invoke_interval", "timeout", "max_output_length", "concurrency", "enable_message_change_based_condition_update", "skip_initial_status"}
CONFIG_KEYS = {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
RULE_KEYS = {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"}
CONDITION_KEYS = {"type", "status", "transition", "reason", "message"}


def seconds(text: str) -> float:
    assert _GO_DURATION.match(text), text
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text))


def npd_validate(config: dict, existing_paths: set[str]) -> None:
    """What NPD's ApplyConfiguration and Validate refuse, plus unknown JSON fields."""
    assert set(config) <= CONFIG_KEYS and config["plugin"] == "custom" and config["source"]
    glob = config["pluginConfig"]
    assert set(glob) <= GLOBAL_KEYS
    limit = seconds(glob["timeout"])
    seconds(glob["invoke_interval"])
    assert all(set(c) <= CONDITION_KEYS for c in config["conditions"])
    defaults = {c["type"] for c in config["conditions"]}
    for rule in config["rules"]:
        assert set(rule) <= RULE_KEYS and rule["type"] in ("temporary", "permanent")
        assert seconds(rule["timeout"]) <= limit, "plugin timeout is greater than global timeout"
        assert rule["path"] in existing_paths, f"rule path {rule['path']!r} does not exist"
        assert all(isinstance(a, str) for a in rule["args"])
        if rule["type"] == "permanent":
            assert rule["condition"] in defaults, "Permanent problem does not have preset default condition"


def emitted(cli, *args: str) -> list[dict]:
    result = cli("fleet", "emit", "k8s", "--gate", "--image", "registry.example/train:2.14-fwdoctor", *args)
    assert result.exit_code == 0, result.output
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_every_document_passes_the_kubernetes_schemas_strictly(cli):
    docs = emitted(cli)
    assert [d["kind"] for d in docs] == ["ServiceAccount", "ClusterRoleBinding", "ConfigMap", "DaemonSet"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_schema_check_is_real_a_wrong_field_fails():
    broken = npd.manifests("registry.example/train:1")[3]
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 7
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = npd.manifests("registry.example/train:1")[3]
    broken["spec"]["template"]["spec"]["nodeSelectr"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_the_npd_config_is_one_npd_loads_and_runs_the_gate_in_its_contract(cli):
    docs = emitted(cli, "--condition", "GpuNodeProblem", "--budget", "45", "--interval", "120")
    config = json.loads(docs[2]["data"]["fwdoctor-gate.json"])
    npd_validate(config, existing_paths={"/usr/local/bin/fwdoctor"})
    (rule,) = config["rules"]
    assert rule["args"] == ["gate", "--exit-codes", "npd", "--budget", "45s"] and rule["condition"] == "GpuNodeProblem"
    assert config["pluginConfig"]["max_output_length"] == 80 and config["pluginConfig"]["invoke_interval"] == "120s"
    daemonset = docs[3]["spec"]["template"]["spec"]
    assert daemonset["serviceAccountName"] == "fwdoctor-gate" and docs[1]["roleRef"]["name"] == "system:node-problem-detector"
    main = daemonset["containers"][0]
    assert main["command"][-1] == "--config.custom-plugin-monitor=/config/fwdoctor-gate.json"
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in main["env"]
    assert daemonset["initContainers"][0]["command"] == ["cp", "/node-problem-detector", "/npd/node-problem-detector"]


def test_a_budget_over_the_interval_or_a_relative_path_is_refused_naming_the_option(cli):
    with pytest.raises(ManifestError, match="--fwdoctor-path"):
        npd.plugin_config("fwdoctor", "FwdoctorProblem", 60, 300)
    result = cli("fleet", "emit", "k8s", "--gate", "--budget", "300", "--interval", "120")
    assert result.exit_code == 2 and "shorter than the interval" in result.output


def test_the_plain_facts_daemonset_is_unchanged_by_the_gate_option(cli):
    result = cli("fleet", "emit", "k8s", "--image", "registry.example/train:1")
    (doc,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert doc["kind"] == "DaemonSet" and doc["metadata"]["name"] == "fwdoctor-facts"
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
