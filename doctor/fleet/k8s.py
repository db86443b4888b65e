"""A Kubernetes DaemonSet that gathers one fwdoctor document per GPU node.

Kubernetes already runs one pod per node (a DaemonSet) and keeps every container's
output (`kubectl logs`), so fwdoctor needs no transport of its own there either:

- the init container `fwdoctor` runs `fwdoctor fleet collect --local`, which prints this
  node's facts (or smoke report) as ONE compact JSON line and exits; the node's name comes
  from the downward API (spec.nodeName), because inside a pod the host name is the pod's;
- the main container is the `pause` image: it holds the pod, so a finished init container
  is not restarted (a DaemonSet's pods must keep running) and its log stays readable;
- `kubectl logs -n NS -l app.kubernetes.io/name=NAME -c fwdoctor --tail=-1 > fleet.jsonl`
  gathers every node's line; `fwdoctor fleet report fleet.jsonl` reads it (JSON Lines).
  `--tail=-1` matters: with a label selector kubectl shows only the last 10 lines of each
  pod unless told otherwise (`kubectl logs --help`), and a pod prints one line anyway.

GPU nodes are chosen with the label the NVIDIA GPU Operator puts on every node with a GPU,
`nvidia.com/gpu.present=true` (NVIDIA/gpu-operator, controllers/state_manager.go:
commonGPULabelKey), and tolerated when tainted `nvidia.com/gpu` (the taint GPU node pools
commonly carry; the NVIDIA device plugin's own DaemonSet tolerates the same key). No GPU
is requested by default: a request would hide every other GPU of the node from the pod
and wait for busy GPUs to free up; NVIDIA_VISIBLE_DEVICES=all asks the NVIDIA container
runtime for all of them instead (`--gpus N` requests N through the device plugin where a
cluster refuses the variable). No host path, no hostPID, no privileges: the facts are the
node's driver and GPUs as the image sees them, which is what a training job in that
image sees.

What the pods reserve is said at the top of the manifest. A GPU requested by the init
container (`--gpus N`) stays reserved for the pod's whole life, not only while fwdoctor runs:
the scheduler counts a pod's effective request as the larger of its init containers' and the
sum of its app containers' ("init containers can reserve resources for initialization that
are not used during the life of the Pod", kubernetes.io/docs/concepts/workloads/pods/
init-containers/#resource-sharing-within-containers), and the pause container keeps the pod.
So the default requests none, the smallest request that works wherever the NVIDIA runtime
honours NVIDIA_VISIBLE_DEVICES, and the manifest says to delete the DaemonSet once gathered.

The default image is the one `fwdoctor docker build stacks/cu130-py312.yaml` tags (the
Dockerfile `fwdoctor docker generate` writes installs fwdoctor beside the locked stack);
it is in no public registry: the manifest says to build and push it, or to pass --image.

The manifest is built as data and written by fwdoctor.render.escape.yaml_dump (PyYAML's safe
dumper, quoting every string YAML 1.1 or 1.2 would type: `y`, `on`, `1e3`, `0o17`, `~`):
no value is ever pasted into YAML text.
"""

from __future__ import annotations

import re
from typing import Any

from fwdoctor.fleet.collect import DEFAULT_TIMEOUT_S, WHAT
from fwdoctor.render.escape import yaml_dump

GPU_LABEL = ("nvidia.com/gpu.present", "true")
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_RESOURCE = "nvidia.com/gpu"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
NODE_NAME_ENV = "FWDOCTOR_NODE_NAME"
CONTAINER = "fwdoctor"
# The image `fwdoctor docker build stacks/cu130-py312.yaml` tags (STACK:latest beside
# STACK:LOCKHASH): built from `fwdoctor docker generate`'s Dockerfile, in no public registry.
DEFAULT_STACK = "cu130-py312"
DEFAULT_IMAGE = f"{DEFAULT_STACK}:latest"
NAME_LABEL = "app.kubernetes.io/name"

# RFC 1123 label (namespaces, object names used as labels): Kubernetes' own rule.
_DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\Z")
# An image reference: no white space or control characters; the registry judges the rest.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,511}\Z")
# A label key ([prefix/]name) and value, as Kubernetes validates them.
_LABEL_KEY = re.compile(r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z")
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z")


class ManifestError(ValueError):
    """An option Kubernetes would refuse; the message names it."""


def _check(pattern: re.Pattern[str], value: str, what: str, rule: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise ManifestError(f"{what} {value!r}: not {rule}")
    return value


def node_selector(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """KEY=VALUE options as a nodeSelector; none given: the GPU Operator's GPU label."""
    if not pairs:
        return {GPU_LABEL[0]: GPU_LABEL[1]}
    selector: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ManifestError(f"--node-selector {pair!r}: not KEY=VALUE")
        _check(_LABEL_KEY, key, "--node-selector key", "a Kubernetes label key")
        _check(_LABEL_VALUE, value, "--node-selector value", "a Kubernetes label value")
        selector[key] = value
    return selector


def container_command(what: str, timeout: float, fwdoctor: str = "fwdoctor") -> list[str]:
    """The init container's command. `$(FWDOCTOR_NODE_NAME)` is expanded by Kubernetes
    from the container's env (the "$(VAR)" syntax of command/args), not by a shell."""
    return [fwdoctor, "-q", "fleet", "collect", "--local", "--what", what,
            "--timeout", f"{timeout:g}", "--node-name", f"$({NODE_NAME_ENV})"]


def daemonset(image: str, namespace: str = "default", name: str = "fwdoctor-facts", what: str = "facts",
              selector: tuple[str, ...] | list[str] = (), gpus: int = 0, runtime_class: str | None = None,
              pause_image: str = PAUSE_IMAGE, timeout: float | None = None) -> dict[str, Any]:
    """The DaemonSet as data (see the module docstring)."""
    _check(_IMAGE, image, "--image", "an image reference")
    _check(_IMAGE, pause_image, "--pause-image", "an image reference")
    _check(_DNS_LABEL, namespace, "--namespace", "a Kubernetes namespace (lower-case letters, digits, '-', at most 63)")
    _check(_DNS_LABEL, name, "--name", "a Kubernetes name (lower-case letters, digits, '-', at most 63)")
    if runtime_class is not None:
        _check(_DNS_LABEL, runtime_class, "--runtime-class", "a RuntimeClass name")
    if what not in WHAT:
        raise ManifestError(f"--what {what!r}: one of {', '.join(WHAT)}")
    if gpus < 0:
        raise ManifestError(f"--gpus {gpus}: not a GPU count")
    timeout = DEFAULT_TIMEOUT_S[what] if timeout is None else timeout
    if not timeout > 0:
        raise ManifestError(f"--timeout {timeout}: not a positive number of seconds")
    labels = {NAME_LABEL: name, "app.kubernetes.io/component": what}
    env = [
        {"name": NODE_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    if gpus == 0:
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
    collector: dict[str, Any] = {
        "name": CONTAINER,
        "image": image,
        "command": container_command(what, timeout),
        "env": env,
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    if gpus:
        collector["resources"] = {"limits": {GPU_RESOURCE: gpus}}
    pod: dict[str, Any] = {
        "nodeSelector": node_selector(selector),
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "initContainers": [collector],
        "containers": [{
            "name": "hold",
            "image": pause_image,
            "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
        }],
        "terminationGracePeriodSeconds": 1,
    }
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": {NAME_LABEL: name}},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        },
    }


def gather_command(namespace: str, name: str) -> list[str]:
    """The kubectl argv that gathers every node's line (JSON Lines on stdout)."""
    return ["kubectl", "logs", "-n", namespace, "-l", f"{NAME_LABEL}={name}", "-c", CONTAINER, "--tail=-1"]


def reservation(manifest: dict[str, Any]) -> list[str]:
    """What the DaemonSet's pods reserve on each node, in words (the manifest's head)."""
    pod = manifest["spec"]["template"]["spec"]
    gpus = max((c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0) for c in pod["initContainers"]), default=0)
    hold = pod["containers"][0].get("resources", {}).get("requests", {})
    held = f"CPU {hold.get('cpu', '0')} and memory {hold.get('memory', '0')} (the pause container)"
    if not gpus:
        return [f"Reserves on each node: no GPU; {held}.",
                "NVIDIA_VISIBLE_DEVICES=all shows every GPU without taking one from jobs",
                "(where the runtime ignores it: --gpus N, which holds N GPUs)."]
    return [f"Reserves on each node: {gpus} {GPU_RESOURCE} for the pod's WHOLE LIFE, not only",
            "while fwdoctor runs (an init container's request is the pod's, and the pause",
            f"container keeps the pod): jobs cannot use those {gpus} GPUs until the DaemonSet",
            f"is deleted (the last step below); also {held}."]


def image_lines(image: str) -> list[str]:
    """Where the image comes from: the default is built by the user, not pulled from a registry."""
    if image != DEFAULT_IMAGE:
        return [f"Image {image}: it must have fwdoctor installed",
                "(your training image plus `pip install fwdoctor`)."]
    stack = f"stacks/{DEFAULT_STACK}.yaml"
    return [f"Image {image}: you build it, no public registry has it:",
            f"  fwdoctor lock {stack}",
            f"  fwdoctor docker generate {stack}",
            f"  fwdoctor docker build {stack}      # tags {image}",
            "then push it where the nodes pull from and pass --image REGISTRY/NAME:TAG."]


def render(manifest: dict[str, Any], namespace: str, name: str) -> str:
    """YAML text: a comment block saying what the pods reserve, where the image comes from
    and how to gather the output, then the manifest."""
    from fwdoctor.quoting import comment, shell_line

    image = manifest["spec"]["template"]["spec"]["initContainers"][0]["image"]
    steps = [
        "fwdoctor fleet emit k8s: one pod per GPU node prints that node's document as one JSON line.",
        *reservation(manifest),
        *image_lines(image),
        f"kubectl apply -f THIS_FILE; kubectl rollout status -n {namespace} daemonset/{name}",
        f"{shell_line(gather_command(namespace, name))} > fleet.jsonl",
        "fwdoctor fleet report fleet.jsonl",
        f"kubectl delete -n {namespace} daemonset/{name}",
    ]
    head = "".join(f"# {comment(line)}\n" for line in steps)
    # yaml_dump quotes every string a YAML 1.1 reader (kubectl's go-yaml) could read as a
    # number, boolean or null: a namespace `1e3`, a label value `y` or `0o17` stay strings.
    return head + yaml_dump(manifest)
