"""`fwdoctor fleet collect` and `fwdoctor fleet emit k8s`: gather one document per node
with the cluster's own tools (srun, pdsh, ssh, a Kubernetes DaemonSet). The work is in
fwdoctor.fleet.collect and fwdoctor.fleet.k8s; this module parses options and reports."""

from __future__ import annotations

import os
import shutil
import sys

import click

from fwdoctor.cli.errors import EXIT_FINDINGS, fail, say
from fwdoctor.cli.output import note

WHATS = ("facts", "smoke")


def _timeout(value: float | None, what: str) -> float:
    from fwdoctor.fleet.collect import DEFAULT_TIMEOUT_S

    if value is None:
        return DEFAULT_TIMEOUT_S[what]
    if not value > 0 or value != value or value == float("inf"):
        fail(f"--timeout {value}: not a positive number of seconds")
    return value


@click.command("collect")
@click.option("--slurm", is_flag=True, help="Run one fwdoctor per node through srun (options for srun after `--`).")
@click.option("--hosts", "hosts_file", type=click.Path(dir_okay=False), help="A file of hosts, one a line: run through pdsh, else ssh (ssh options after `--`).")
@click.option("--local", is_flag=True, help="This node only: print its document as one JSON line (what `fleet emit k8s` pods run).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Folder for the documents, one file per node (default: ./fleet-facts or ./fleet-smoke).")
@click.option("--what", type=click.Choice(WHATS), default="facts", show_default=True, help="facts: `fwdoctor facts`; smoke: `fwdoctor smoke all --json` (minutes, uses the GPUs).")
@click.option("--fwdoctor", "fwdoctor_cmd", metavar="CMD", help="The fwdoctor on the nodes (default: this one's absolute path if it exists, else fwdoctor on PATH).")
@click.option("--timeout", type=float, help="Seconds the srun/pdsh run may take, or each host's ssh (default: 600 for facts, 3600 for smoke).")
@click.option("--via", type=click.Choice(("auto", "pdsh", "ssh")), default="auto", show_default=True, help="With --hosts: pdsh when installed (auto), or one ssh per host.")
@click.option("--fanout", type=click.IntRange(1, 1024), default=32, show_default=True, help="With --hosts: hosts at a time.")
@click.option("--connect-timeout", type=click.IntRange(1, 600), default=10, show_default=True, help="With --hosts: ssh's ConnectTimeout, seconds.")
@click.option("--node-name", help="With --local: the name this node's document carries (a pod passes its node's name).")
@click.argument("passthrough", nargs=-1, type=click.UNPROCESSED, metavar="[-- SRUN|SSH OPTIONS...]")
def fleet_collect(slurm, hosts_file, local, out_dir, what, fwdoctor_cmd, timeout, via, fanout, connect_timeout, node_name, passthrough) -> None:
    """Gather one facts document (or smoke report) per node into --out, one file each.

    \b
    Nothing of fwdoctor's own travels between hosts: srun, pdsh or ssh start
    `fwdoctor facts` on each node and bring its output back.
    \b
    Examples:
      fwdoctor fleet collect --slurm --out facts/ -- -N 32 -p gpu
      fwdoctor fleet collect --slurm --what smoke --out smoke/ \\
          -- -N 4 --gpus-per-node=8
      fwdoctor fleet collect --hosts nodes.txt --out facts/ -- -l admin
      fwdoctor fleet report facts/
    \b
    Files: OUT/<node>.json (smoke: OUT/<node>.smoke.json), written atomically.
    Exit 1 when a node failed (named on stderr with its last lines; the others are
    still written), 2 for bad input.
    """
    from fwdoctor.fleet import collect as fc

    modes = [flag for flag, on in (("--slurm", slurm), ("--hosts", hosts_file is not None), ("--local", local)) if on]
    if len(modes) != 1:
        fail("fleet collect: give exactly one of --slurm, --hosts FILE, --local" + (f" (got {', '.join(modes)})" if modes else ""))
    if node_name is not None and not local:
        fail("--node-name: only with --local")
    timeout_s = _timeout(timeout, what)
    try:
        fwdoctor = fc.validate_fwdoctor(fwdoctor_cmd if fwdoctor_cmd is not None else fc.default_fwdoctor())
    except fc.CollectError as exc:
        fail(str(exc))

    if local:
        _local(fwdoctor, what, timeout_s, node_name, passthrough)
        return

    out = out_dir or f"fleet-{what}"
    if os.path.exists(out) and not os.path.isdir(out):
        fail(f"--out {out}: exists and is not a folder")
    try:
        if slurm:
            results, failure = _slurm(fc, fwdoctor, what, passthrough, timeout_s)
        else:
            results, failure = _hosts(fc, hosts_file, fwdoctor, what, passthrough, timeout_s, via, fanout, connect_timeout)
    except fc.CollectError as exc:
        fail(str(exc))
    if results:
        try:
            os.makedirs(out, exist_ok=True)
            fc.write_documents(results, out, what)
        except OSError as exc:
            fail(f"--out {out}: {exc.strerror or exc}")
    _report(results, failure, out)
    if failure or fc.failures(results):
        sys.exit(EXIT_FINDINGS)


def _slurm(fc, fwdoctor: str, what: str, options: tuple[str, ...], timeout: float):
    srun = shutil.which("srun")
    if srun is None:
        fail("--slurm: srun is not on PATH (run this on a Slurm login node)")
    argv = fc.slurm_argv(fwdoctor, what, options, srun)
    note(f"fleet collect: {' '.join(argv)}")

    def progress(line: str) -> None:
        # srun's own launch and exit lines show the run moving; the rest waits for the summary.
        if "_task_start: Node" in line or " error: " in line:
            from fwdoctor.quoting import comment

            note(f"fleet collect: {comment(line)}")

    return fc.collect_slurm(fwdoctor, what, options, timeout, on_line=progress, srun=srun)


def _hosts(fc, hosts_file: str, fwdoctor: str, what: str, options: tuple[str, ...], timeout: float,
           via: str, fanout: int, connect_timeout: int):
    from fwdoctor.host import read_regular_file

    try:
        raw = read_regular_file(hosts_file, fc.MAX_HOSTS_FILE_BYTES, "--hosts")
        text = raw.decode("utf-8")
    except ValueError as exc:  # UnicodeDecodeError is one too
        fail(str(exc) if not isinstance(exc, UnicodeDecodeError) else f"--hosts {hosts_file}: not UTF-8 text")
    hosts = fc.parse_hosts_file(text, f"--hosts {hosts_file}")
    names = [fc.host_only(h) for h in hosts]
    if len(set(names)) != len(names):
        fail(f"--hosts {hosts_file}: a host appears twice (with different users)")
    pdsh = shutil.which("pdsh") if via in ("auto", "pdsh") else None
    if via == "pdsh" and pdsh is None:
        fail("--via pdsh: pdsh is not on PATH")
    if pdsh is not None:
        note(f"fleet collect: pdsh -R ssh over {len(hosts)} host(s), {fanout} at a time")
        return fc.collect_pdsh(hosts, fwdoctor, what, options, timeout, connect_timeout, fanout, pdsh=pdsh)
    ssh = shutil.which("ssh")
    if ssh is None:
        fail("--hosts: neither pdsh nor ssh is on PATH")
    note(f"fleet collect: ssh to {len(hosts)} host(s), {fanout} at a time")

    def done(result) -> None:
        note(f"fleet collect: {result.node}: {'ok' if result.ok else 'failed'}")

    return fc.collect_ssh(hosts, fwdoctor, what, options, timeout, connect_timeout, fanout, on_done=done, ssh=ssh), ""


def _report(results, failure: str, out: str) -> None:
    """Paths written on stdout (one a line, for scripts); failures on stderr, always (-q
    silences progress, never a failure)."""
    from fwdoctor.quoting import comment  # a node's output may hold terminal escapes: shown escaped

    written = [r for r in results if r.ok]
    for result in written:
        click.echo(comment(str(result.path)))
    for result in results:
        if result.ok:
            continue
        say(f"fwdoctor: node {comment(result.node)}: failed: {comment(result.problem)}")
        for line in result.stderr_tail:
            click.echo(f"    {comment(line)}", err=True)
    if failure:
        say(f"fwdoctor: fleet collect: {failure}")
    note(f"fleet collect: {len(written)} of {len(results)} node(s) written to {out}")


def _local(fwdoctor: str, what: str, timeout: float, node_name: str | None, passthrough: tuple[str, ...]) -> None:
    from fwdoctor.fleet.collect import json_line, local_document

    if passthrough:
        fail(f"--local takes no other arguments (got {' '.join(passthrough)!r})")
    if node_name is not None and (not node_name.strip() or any(ord(c) < 32 for c in node_name)):
        fail(f"--node-name {node_name!r}: not a node name")
    document, problem = local_document(fwdoctor, what, timeout, node_name)
    if document is None:
        # One line on stderr (in a pod's log): the DaemonSet shows the pod as failed.
        say(f"fwdoctor: node {node_name or 'here'}: failed: {problem}")
        sys.exit(EXIT_FINDINGS)
    click.echo(json_line(document))


@click.group("emit")
def fleet_emit() -> None:
    """Write what a cluster runs to gather the documents itself (a Kubernetes manifest)."""


@fleet_emit.command("k8s")
@click.option("--image", help="An image with fwdoctor installed: your training image plus `pip install fwdoctor`, so the facts are the jobs' (default: cu130-py312:latest, the image `fwdoctor docker generate` and `fwdoctor docker build stacks/cu130-py312.yaml` make; build and push it first).")
@click.option("--namespace", default="default", show_default=True)
@click.option("--name", default="fwdoctor-facts", show_default=True, help="The DaemonSet's name and its pods' app.kubernetes.io/name label.")
@click.option("--what", type=click.Choice(WHATS), default="facts", show_default=True)
@click.option("--node-selector", "selector", multiple=True, metavar="KEY=VALUE", help="Nodes to run on (default: nvidia.com/gpu.present=true, the GPU Operator's label).")
@click.option("--gpus", type=click.IntRange(0, 64), default=0, show_default=True, help="Request this many nvidia.com/gpu (0: none; NVIDIA_VISIBLE_DEVICES=all shows every GPU). N is held for the pod's whole life, until the DaemonSet is deleted.")
@click.option("--runtime-class", help="runtimeClassName for the pods (e.g. nvidia, where it is not the default runtime).")
@click.option("--timeout", type=float, help="Seconds each node's collection may take (default: 600 facts, 3600 smoke).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the manifest here (default: stdout).")
@click.option("--gate", "gate", is_flag=True, help="Instead: Node Problem Detector running `fwdoctor gate` on each node, setting a node condition (docs/gate.md).")
@click.option("--condition", default="FwdoctorProblem", show_default=True, help="With --gate: the node condition (True: fwdoctor would drain the node).")
@click.option("--budget", "budget_s", type=click.IntRange(5, 3600), default=60, show_default=True, help="With --gate: seconds each gate run may take.")
@click.option("--interval", "interval_s", type=click.IntRange(10, 86400), default=300, show_default=True, help="With --gate: seconds between gate runs.")
@click.option("--fwdoctor-path", default="/usr/local/bin/fwdoctor", show_default=True, help="With --gate: fwdoctor's absolute path in --image (NPD checks it exists).")
def emit_k8s(image, namespace, name, what, selector, gpus, runtime_class, timeout, out_file, gate, condition, budget_s, interval_s, fwdoctor_path) -> None:
    """A DaemonSet: one pod per GPU node prints that node's document as one JSON line.

    \b
    Examples:
      fwdoctor fleet emit k8s --image registry.example/train:2.14-fwdoctor \\
          > fwdoctor.yaml
      kubectl apply -f fwdoctor.yaml
      kubectl rollout status -n default daemonset/fwdoctor-facts
      kubectl logs -n default -l app.kubernetes.io/name=fwdoctor-facts \\
          -c fwdoctor --tail=-1 > fleet.jsonl
      fwdoctor fleet report fleet.jsonl
      kubectl delete -f fwdoctor.yaml
      fwdoctor fleet emit k8s --gate \\
          --image registry.example/train:2.14-fwdoctor > gate.yaml
    """
    from fwdoctor.fleet import k8s

    image = image or k8s.DEFAULT_IMAGE
    if gate:
        from fwdoctor.fleet import npd

        try:
            docs = npd.manifests(image, namespace, "fwdoctor-gate" if name == "fwdoctor-facts" else name, selector, condition,
                                 budget_s, interval_s, fwdoctor_path, runtime_class=runtime_class)
        except k8s.ManifestError as exc:
            fail(str(exc))
        _write(npd.render(docs, condition), out_file)
        return
    try:
        manifest = k8s.daemonset(image, namespace, name, what, selector, gpus, runtime_class, timeout=_timeout(timeout, what))
    except k8s.ManifestError as exc:
        fail(str(exc))
    if not _write(k8s.render(manifest, namespace, name), out_file):
        return
    note(f"fleet emit k8s: wrote {out_file}; gather with: kubectl logs -n {namespace} -l {k8s.NAME_LABEL}={name} -c {k8s.CONTAINER} --tail=-1 > fleet.jsonl")


def _write(text: str, out_file: str | None) -> bool:
    """The manifest to stdout, or to --out (then True)."""
    if out_file is None:
        click.echo(text, nl=False)
        return False
    try:
        with open(out_file, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        fail(f"--out {out_file}: {exc.strerror or exc}")
    return True
