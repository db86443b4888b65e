"""`fleet emit k8s`: the DaemonSet parses, carries what GPU nodes need, and its container
command, run here with the env the pod would have, prints one JSON line per node that
`fleet report`'s loader takes as that node's facts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fwdoctor.fleet import documents, k8s

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def _manifest(cli, *args: str) -> tuple[str, dict]:
    result = cli("fleet", "emit", "k8s", *args)
    assert result.exit_code == 0, result.output
    return result.output, yaml.safe_load(result.output)


def _pod(manifest: dict) -> dict:
    return manifest["spec"]["template"]["spec"]


def test_the_manifest_is_a_daemonset_for_gpu_nodes(cli):
    text, manifest = _manifest(cli, "--image", "registry.example/train:2.14-fwdoctor", "--namespace", "ml", "--name", "gpu-facts")
    assert manifest["apiVersion"] == "apps/v1" and manifest["kind"] == "DaemonSet"
    assert manifest["metadata"] == {"name": "gpu-facts", "namespace": "ml",
                                    "labels": {"app.kubernetes.io/name": "gpu-facts", "app.kubernetes.io/component": "facts"}}
    assert manifest["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "gpu-facts"}
    assert manifest["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "gpu-facts"
    pod = _pod(manifest)
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "hostPID" not in pod and "hostNetwork" not in pod and "volumes" not in pod
    (init,) = pod["initContainers"]
    assert init["name"] == "fwdoctor" and init["image"] == "registry.example/train:2.14-fwdoctor"
    assert init["command"][:5] == ["fwdoctor", "-q", "fleet", "collect", "--local"]
    env = {e["name"]: e for e in init["env"]}
    assert env["FWDOCTOR_NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert "resources" not in init  # no GPU requested: every GPU of the node stays visible
    assert [c["image"] for c in pod["containers"]] == [k8s.PAUSE_IMAGE]
    # how to gather it is written at the top, exactly
    assert "# kubectl logs -n ml -l app.kubernetes.io/name=gpu-facts -c fwdoctor --tail=-1 > fleet.jsonl\n" in text


def test_gpus_runtime_class_selector_and_smoke_are_options(cli):
    _, manifest = _manifest(cli, "--gpus", "8", "--runtime-class", "nvidia", "--node-selector", "pool=h100",
                            "--node-selector", "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3", "--what", "smoke")
    pod = _pod(manifest)
    init = pod["initContainers"][0]
    assert init["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in init["env"]}
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"pool": "h100", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert init["command"][5:9] == ["--what", "smoke", "--timeout", "3600"]


@pytest.mark.parametrize("args, message", [
    (("--image", "evil\nkind: Pod"), "--image"),
    (("--image", "a b"), "--image"),
    (("--image", "-oops"), "--image"),
    (("--name", "Bad_Name"), "--name"),
    (("--name", "x" * 64), "--name"),
    (("--namespace", "kube system"), "--namespace"),
    (("--node-selector", "novalue"), "--node-selector"),
    (("--node-selector", "k=v: x"), "--node-selector value"),
    (("--runtime-class", "Nvidia!"), "--runtime-class"),
    (("--timeout", "0"), "--timeout"),
])
def test_values_kubernetes_would_refuse_or_that_could_bend_the_yaml_are_exit_2(cli, args, message):
    result = cli("fleet", "emit", "k8s", *args)
    assert result.exit_code == 2 and message in result.output


def _expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of command/args (from the container's env; $$ is $)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), arg)


def test_the_pods_command_run_here_prints_one_line_the_fleet_loader_reads_as_that_nodes_facts(cli, tmp_path):
    _, manifest = _manifest(cli)
    init = _pod(manifest)["initContainers"][0]
    # The env the pod would have: the downward API's node name, the plain values as given.
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "FWDOCTOR_NODE_NAME": "gpu-node-017"}
    for item in init["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
    argv = [_expand(arg, env) for arg in init["command"]]
    assert argv[-2:] == ["--node-name", "gpu-node-017"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # a pod's log is stdout and stderr together: nothing but the line
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["kind"] == "facts"
    # Two pods' logs gathered into one file, as `kubectl logs -l ... > fleet.jsonl` makes it.
    fleet = tmp_path / "fleet.jsonl"
    other = json.loads(lines[0])
    other["host"]["name"] = "gpu-node-018"
    fleet.write_text(lines[0] + "\n" + json.dumps(other, separators=(",", ":")) + "\n")
    read = list(documents.documents([str(fleet)]))
    assert all(isinstance(doc, documents.Document) for doc in read), read
    assert [(doc.kind, doc.host_name) for doc in read] == [("facts", "gpu-node-017"), ("facts", "gpu-node-018")]
    assert read[0].data["facts"]["python.version"]["value"]


def test_the_local_line_still_matches_the_facts_schema():
    import jsonschema
    from referencing import Registry, Resource

    out = subprocess.run([str(VENV_BIN / "fwdoctor"), "fleet", "collect", "--local", "--node-name", "n1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    schemas = [json.loads(p.read_text()) for p in (REPO / "doctor" / "schemas").glob("*.json")]
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas if "$id" in s])
    facts_schema = json.loads((REPO / "doctor" / "schemas" / "facts.json").read_text())
    errors = [e.message for e in jsonschema.Draft202012Validator(facts_schema, registry=registry).iter_errors(document)]
    assert errors == []
    assert document["host"]["name"] == "n1" and "Kubernetes" in document["host"]["source"]


def test_a_failing_node_prints_one_line_on_stderr_and_exits_1(tmp_path):
    out = subprocess.run([str(VENV_BIN / "fwdoctor"), "fleet", "collect", "--local", "--node-name", "n1", "--fwdoctor", "/bin/false"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == "fwdoctor: node n1: failed: exit status 1; no JSON document on stdout (it printed nothing)\n"


# --------------------------------------------------------------------------- what it reserves (issue 29, item 7)
K8S_VERSION = "1.33"  # as tests/test_gate_k8s.py


@pytest.mark.parametrize("args", [(), ("--what", "smoke"), ("--what", "smoke", "--gpus", "8"), ("--gpus", "1", "--runtime-class", "nvidia")])
def test_every_variant_passes_the_kubernetes_schemas(cli, args):
    import kubernetes_validate

    _, manifest = _manifest(cli, *args)
    kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


def test_by_default_no_gpu_is_reserved_even_for_smoke_and_the_manifest_says_so(cli):
    text, manifest = _manifest(cli, "--what", "smoke")
    assert "resources" not in _pod(manifest)["initContainers"][0]  # the smallest request that works
    assert "# Reserves on each node: no GPU; CPU 1m and memory 8Mi (the pause container).\n" in text


def test_a_gpu_request_is_said_to_be_held_for_the_pods_whole_life(cli):
    text, manifest = _manifest(cli, "--what", "smoke", "--gpus", "8")
    assert _pod(manifest)["initContainers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    head = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
    assert "Reserves on each node: 8 nvidia.com/gpu for the pod's WHOLE LIFE" in head
    assert "jobs cannot use those 8 GPUs until the DaemonSet is deleted" in head


def test_the_default_image_is_the_one_fwdoctor_docker_build_tags_and_the_manifest_says_how_to_make_it(cli):
    text, manifest = _manifest(cli)
    assert _pod(manifest)["initContainers"][0]["image"] == k8s.DEFAULT_IMAGE == f"{k8s.DEFAULT_STACK}:latest"
    assert (REPO / "stacks" / f"{k8s.DEFAULT_STACK}.yaml").is_file()
    for step in ("lock", "docker generate", "docker build"):
        assert f"#   fwdoctor {step} stacks/{k8s.DEFAULT_STACK}.yaml" in text
    assert "pass --image REGISTRY/NAME:TAG" in text
    # fwdoctor docker build tags the image STACK:latest (doctor/cli/stack.py)
    assert 'f"{resolved.name}:latest"' in (REPO / "doctor" / "cli" / "stack.py").read_text()
    own, _ = _manifest(cli, "--image", "registry.example/train:2.14-fwdoctor")
    assert "docker generate" not in own and "# Image registry.example/train:2.14-fwdoctor: it must have fwdoctor installed\n" in own
