"""`fwdoctor fleet emit k8s --gate`: Node Problem Detector runs `fwdoctor gate` on every GPU
node and sets a node condition from its answer.

NPD's custom-plugin contract (kubernetes/node-problem-detector
pkg/custompluginmonitor/types/types.go and config.go, commit 01a6793b): the plugin exits 0
(OK), 1 (NonOK) or anything else (Unknown); the first `max_output_length` bytes of its
stdout (default 80) become the message; a "permanent" rule sets its `condition` to True
while the plugin says NonOK, and every permanent rule's condition needs a default in
`conditions`. NPD refuses a config whose rule `path` does not exist (os.Stat: so an
absolute path) or whose rule timeout exceeds the global `timeout`. `fwdoctor gate
--exit-codes npd` speaks exactly this.

The condition is True when the node should not take jobs, as every NPD condition
(KernelDeadlock, ReadonlyFilesystem): so its default name is FwdoctorProblem, not
FwdoctorReady, which would read True on a broken node. `--condition` renames it.

NPD is one static Go binary: an init container from NPD's image copies it into an emptyDir,
and NPD runs in the fwdoctor image, where the plugin (fwdoctor) lives. The ServiceAccount is
bound to Kubernetes' bootstrap ClusterRole system:node-problem-detector (get nodes, patch
nodes/status, create and patch events: plugin/pkg/auth/authorizer/rbac/bootstrappolicy).
"""

from __future__ import annotations

import json
import re
from typing import Any

from fwdoctor.render.escape import yaml_dump
from fwdoctor.fleet.k8s import (
    GPU_TAINT_KEY, NAME_LABEL, ManifestError, _check, _DNS_LABEL, _IMAGE, node_selector,
)

NPD_IMAGE = "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.21"
NPD_BINARY = "/node-problem-detector"  # where NPD's image keeps it (its Dockerfile's COPY)
NPD_CONFIG = "fwdoctor-gate.json"
DEFAULT_CONDITION = "FwdoctorProblem"
MAX_OUTPUT = 80  # NPD's defaultMaxOutputLength; gate --exit-codes npd writes at most this
_CONDITION = re.compile(r"[A-Z][A-Za-z0-9]{0,62}\Z")
_ABS_PATH = re.compile(r"/[A-Za-z0-9._/+-]{1,255}\Z")


def plugin_config(fwdoctor: str, condition: str, budget_s: int, interval_s: int) -> dict[str, Any]:
    """NPD's custom plugin monitor config for one permanent rule running the gate."""
    _check(_ABS_PATH, fwdoctor, "--fwdoctor-path", "an absolute path (NPD stats the rule's path)")
    _check(_CONDITION, condition, "--condition", "a CamelCase condition type")
    if not 5 <= budget_s <= 3600 or interval_s <= budget_s:
        raise ManifestError(f"--budget {budget_s}s / --interval {interval_s}s: the budget must be 5 s to an hour and shorter than the interval")
    # NPD kills the plugin at the rule's timeout; the gate ends itself at its budget, so the
    # timeout leaves room for the process start on top of it.
    timeout = f"{budget_s + 15}s"
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": f"{interval_s}s", "timeout": timeout, "max_output_length": MAX_OUTPUT,
                         "concurrency": 1, "enable_message_change_based_condition_update": True},
        "source": "fwdoctor-gate",
        "metricsReporting": True,
        "conditions": [{"type": condition, "reason": "FwdoctorGatePassed", "message": "fwdoctor gate: the node may take jobs"}],
        "rules": [{"type": "permanent", "condition": condition, "reason": "FwdoctorGateFailed", "path": fwdoctor,
                   "args": ["gate", "--exit-codes", "npd", "--budget", f"{budget_s}s"], "timeout": timeout}],
    }


def manifests(image: str, namespace: str = "default", name: str = "fwdoctor-gate", selector: tuple[str, ...] | list[str] = (),
              condition: str = DEFAULT_CONDITION, budget_s: int = 60, interval_s: int = 300, fwdoctor: str = "/usr/local/bin/fwdoctor",
              npd_image: str = NPD_IMAGE, runtime_class: str | None = None) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRoleBinding, ConfigMap and DaemonSet, as data."""
    _check(_IMAGE, image, "--image", "an image reference")
    _check(_IMAGE, npd_image, "--npd-image", "an image reference")
    _check(_DNS_LABEL, namespace, "--namespace", "a Kubernetes namespace (lower-case letters, digits, '-', at most 63)")
    _check(_DNS_LABEL, name, "--name", "a Kubernetes name (lower-case letters, digits, '-', at most 63)")
    if runtime_class is not None:
        _check(_DNS_LABEL, runtime_class, "--runtime-class", "a RuntimeClass name")
    config = plugin_config(fwdoctor, condition, budget_s, interval_s)
    labels = {NAME_LABEL: name, "app.kubernetes.io/component": "gate"}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{name}-{namespace}"[:253], "labels": dict(labels)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-problem-detector"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-npd", "namespace": namespace, "labels": dict(labels)},
                 "data": {NPD_CONFIG: json.dumps(config) + "\n"}}
    pod: dict[str, Any] = {
        "serviceAccountName": name,
        "nodeSelector": node_selector(selector),
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "initContainers": [{
            "name": "npd-binary", "image": npd_image,
            "command": ["cp", NPD_BINARY, "/npd/node-problem-detector"],
            "volumeMounts": [{"name": "npd", "mountPath": "/npd"}],
            "securityContext": {"allowPrivilegeEscalation": False},
        }],
        "containers": [{
            "name": "gate", "image": image,
            "command": ["/npd/node-problem-detector", "--logtostderr", f"--config.custom-plugin-monitor=/config/{NPD_CONFIG}"],
            # NPD names the node it reports on from NODE_NAME (the downward API's spec.nodeName).
            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
            "volumeMounts": [{"name": "npd", "mountPath": "/npd", "readOnly": True},
                             {"name": "config", "mountPath": "/config", "readOnly": True}],
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "1Gi"}},
            "securityContext": {"allowPrivilegeEscalation": False},
        }],
        "volumes": [{"name": "npd", "emptyDir": {}}, {"name": "config", "configMap": {"name": f"{name}-npd"}}],
    }
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"selector": {"matchLabels": {NAME_LABEL: name}},
                 "template": {"metadata": {"labels": dict(labels)}, "spec": pod}},
    }
    return [account, binding, configmap, daemonset]


def render(docs: list[dict[str, Any]], condition: str) -> str:
    from fwdoctor.quoting import comment

    head = [
        "fwdoctor fleet emit k8s --gate: Node Problem Detector runs `fwdoctor gate --exit-codes npd` on each GPU node",
        f"and sets the node condition {condition} (True: fwdoctor would drain this node; the message says why).",
        "kubectl apply -f THIS_FILE; kubectl get nodes -o custom-columns=NAME:.metadata.name,"
        f"PROBLEM:.status.conditions[?(@.type=='{condition}')].status",
    ]
    return "".join(f"# {comment(line)}\n" for line in head) + "---\n".join(yaml_dump(doc) for doc in docs)
