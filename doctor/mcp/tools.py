"""The MCP server's tools: read-only questions an assistant asks, answered by the functions
the CLI commands call, as the CLI's own JSON documents.

Nothing here imports the MCP SDK (fwdoctor.mcp.server does): the table, the argument
checks and the path boundary are plain code. Each tool's arguments are a schema of
doctor/schemas/mcp-tools.json; its result is the document of doctor/schemas/<kind>.json,
exactly what the matching `fwdoctor ... --json` prints.

No tool installs, applies, builds or runs a GPU workload: `plan_fix` plans and names the
`fwdoctor fix ID --apply` a person runs. Paths an assistant passes must resolve (symbolic
links followed) inside a folder the user allowed at start (`--allow-root DIR`); with none
allowed, no path is accepted. Every failure is a ToolError with the one-line message the
CLI would print.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, Mapping, Sequence

import click

from fwdoctor.schema import stamp
from fwdoctor.sources import SourceRequest, utc_now


class ToolError(Exception):
    """A tool's input cannot be used, or the doctor failed on it: one line for the assistant."""


# ----------------------------------------------------------------------------- boundary
class Roots:
    """The folders the user allowed at server start, symbolic links resolved."""

    def __init__(self, folders: Sequence[str]) -> None:
        resolved = []
        for folder in folders:
            real = os.path.realpath(folder)
            if not os.path.isdir(real):
                raise ToolError(f"--allow-root {folder}: not a folder")
            resolved.append(real)
        self.folders: tuple[str, ...] = tuple(dict.fromkeys(resolved))

    def confine(self, path: str, what: str) -> str:
        """`path` resolved (every link followed), if that lies within an allowed folder."""
        if not self.folders:
            raise ToolError(f"{what} {path}: no path is accepted: the server was started without --allow-root DIR")
        if "\0" in path:
            raise ToolError(f"{what}: a path with a NUL byte")
        if not os.path.isabs(path):
            raise ToolError(f"{what} {path}: give an absolute path within {', '.join(self.folders)}")
        real = os.path.realpath(path)
        if not any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep) for folder in self.folders):
            via = f" (it resolves to {real})" if real != os.path.normpath(path) else ""
            raise ToolError(f"{what} {path}: outside the folders allowed with --allow-root ({', '.join(self.folders)}){via}")
        return real


# ----------------------------------------------------------------------------- schemas
def _schema_file(name: str) -> dict[str, Any]:
    text = (resources.files("fwdoctor") / "schemas" / f"{name}.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def output_schema(kind: str) -> dict[str, Any]:
    """The schema of document `kind`, self-contained: the schemas it refers to (by their
    urn:fwdoctor:schema: $id) are embedded under $defs, so a client resolves every $ref
    within the one document it is sent."""
    schema = copy.deepcopy(_schema_file(kind))
    wanted, seen = _referenced(schema), {kind}
    embedded: dict[str, Any] = {}
    while wanted - seen:
        other = sorted(wanted - seen)[0]
        seen.add(other)
        body = _schema_file(other)
        body.pop("$schema", None)
        embedded[f"fwdoctor:{other}"] = body
        wanted |= _referenced(body)
    schema.setdefault("$defs", {}).update(embedded)
    return schema


def _referenced(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("urn:fwdoctor:schema:"):
            found.add(ref[len("urn:fwdoctor:schema:"):].split("#", 1)[0])
        for value in node.values():
            found |= _referenced(value)
    elif isinstance(node, list):
        for value in node:
            found |= _referenced(value)
    return found


def input_schema(tool: str) -> dict[str, Any]:
    return copy.deepcopy(_schema_file("mcp-tools")["tools"][tool])


# ----------------------------------------------------------------------------- the tools
@dataclass(frozen=True)
class Context:
    """What every call shares: the allowed folders and the KB the server was started with."""

    roots: Roots
    kb_dir: str | None = None


def _document(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The document `emit_json(kind, body)` prints, as data."""
    loaded: dict[str, Any] = json.loads(json.dumps(stamp(kind, body), default=str))
    return loaded


_SOURCE_KEYS = ("root", "env_file", "facts", "facts_document", "image", "image_archive")


def _source(ctx: Context, args: Mapping[str, Any], scratch: list[str]) -> SourceRequest:
    """The SourceRequest the CLI's source flags would make, every path confined."""
    named = [key for key in _SOURCE_KEYS if key in args and key != "env_file"]
    if len(named) > 1:
        raise ToolError(f"{' and '.join(named)} cannot be combined: pick one source of facts")
    if args.get("against_host") and "root" not in args:
        raise ToolError("against_host needs root")
    facts_file = ctx.roots.confine(args["facts"], "facts") if "facts" in args else None
    if "facts_document" in args:
        # Read back through the same reader (and its size and depth caps) as a facts file.
        fd, facts_file = tempfile.mkstemp(prefix="fwdoctor-mcp-", suffix=".json")
        scratch.append(facts_file)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(args["facts_document"], handle)
    from fwdoctor.cli.common import seconds

    return SourceRequest(
        root=ctx.roots.confine(args["root"], "root") if "root" in args else None,
        env_file=ctx.roots.confine(args["env_file"], "env_file") if "env_file" in args else None,
        facts_file=facts_file,
        image=args.get("image"),
        image_archive=ctx.roots.confine(args["image_archive"], "image_archive") if "image_archive" in args else None,
        against_host=bool(args.get("against_host", False)),
        timeout=seconds(float(args.get("timeout", 10.0)), "timeout"),
    )


def check(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.check import check_report
    from fwdoctor.render import report as rep

    scratch: list[str] = []
    try:
        report = check_report(_source(ctx, args, scratch), tuple(args.get("only", ())), ctx.kb_dir)
    finally:
        _remove(scratch)
    loaded: dict[str, Any] = json.loads(rep.render_json(report, checked_at=utc_now()))
    return loaded


def explain(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.catalog import finding_entry

    return _document("finding", finding_entry(args["id"]))


def list_findings(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.catalog import finding_list

    return _document("finding-list", finding_list())


def select(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.recipes import select_for

    framework = args.get("framework", "torch")
    if framework != "torch" and ("torch_spec" in args or "cuda" in args):
        raise ToolError(f"torch_spec and cuda are torch's alone, not {framework}'s")
    source = SourceRequest(python=args.get("python"))
    selection = select_for(framework, source, args.get("driver"), tuple(args.get("gpus", ())),
                           args.get("torch_spec", ""), args.get("cuda"), ctx.kb_dir)
    return _document("selection", selection.to_json())


def plan_fix(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.recipes import plan_fixes

    scratch: list[str] = []
    try:
        planned = plan_fixes((args["id"],), _source(ctx, args, scratch), ctx.kb_dir)
    finally:
        _remove(scratch)
    script = "".join(plan.to_shell() for plan in planned.plans)  # quoted by fwdoctor.quoting
    applicable = [plan for plan in planned.plans if not plan.refused]
    return _document("plans", {
        "plans": [{"plan": plan.to_json(), "applied": None} for plan in planned.plans],
        "manual": planned.manual_json(),
        "still_present": None,
        "driver_first": planned.todo.driver_first.to_json() if planned.todo.driver_first else None,
        "script": script,
        # A person's command, on the host the plan is for: --apply asks before each plan.
        "apply_command": f"fwdoctor fix {args['id']} --apply" if applicable else "",
    })


def triage(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.triage import triage_text
    from fwdoctor.triage.render import to_json

    _, result = triage_text(str(args["report"]).encode("utf-8", "replace"), "report", ctx.kb_dir)
    return _document("triage", to_json(result))


def fleet_report(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    from fwdoctor.cli.common import load_kb
    from fwdoctor.fleet import report as fr
    from fwdoctor.fleet.documents import BadInput, paths_in
    from fwdoctor.fleet.drift import MAX_LISTED
    from fwdoctor.rules import KB_AREAS

    paths = [ctx.roots.confine(path, "paths") for path in args["paths"]]
    for item in paths_in(paths):  # a folder's files too: a link in it may point anywhere
        if not isinstance(item, BadInput):
            ctx.roots.confine(item, "paths")
    report = fr.build(paths, load_kb(ctx.kb_dir, KB_AREAS), max_listed=int(args.get("max_listed", MAX_LISTED)), progress=lambda n: None)
    return _document("fleet", fr.to_json(report))


def _remove(paths: list[str]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


@dataclass(frozen=True)
class Tool:
    name: str
    kind: str  # the result's document kind: its schema is doctor/schemas/<kind>.json
    run: Callable[[Context, Mapping[str, Any]], dict[str, Any]]
    description: str


# The whole server, in the order tools/list shows them.
TOOLS: tuple[Tool, ...] = (
    Tool("check", "check", check,
         "Judge a GPU/deep-learning environment and get fwdoctor's check document (what `fwdoctor check --json` "
         "prints): a per-layer summary (driver, GPUs, CUDA toolkit, torch, cuDNN, NCCL, Python), every fact read, "
         "and findings with evidence and a fix. Use it first when CUDA, the driver, torch/jax/tensorflow, cuDNN or "
         "NCCL misbehave, instead of scraping nvidia-smi or pip. No arguments: this host. Or one of root (a rootfs "
         "folder), image (a Docker image name), image_archive (a docker save tarball/OCI layout), facts or "
         "facts_document (saved facts from another machine). Paths must lie within the folders the user allowed."),
    Tool("explain", "finding", explain,
         "What a finding means, the exact error users see, and how to fix it (`fwdoctor explain ID`). Use it on a "
         "finding id or code from check, triage or fleet_report before acting on it."),
    Tool("list_findings", "finding-list", list_findings,
         "Every finding fwdoctor can report: id, code, severity, area, title (`fwdoctor list`). Use it to learn "
         "what fwdoctor checks, or to find the id to pass to explain, check's only, or plan_fix."),
    Tool("select", "selection", select,
         "The newest torch (or jax, tensorflow) release that runs on this host, or on a machine described by "
         "driver, gpus and python, with the reasons newer ones do not (`fwdoctor select torch --json`). Use it "
         "before recommending an install command or a CUDA variant; it reads the knowledge base and installs nothing."),
    Tool("plan_fix", "plans", plan_fix,
         "The dry-run plan that fixes one finding (`fwdoctor fix ID --json`): each step's argv, files and "
         "verification as data, the same plan as a commented, quoted shell script, and apply_command, the command "
         "a person runs to apply it. Use it when the user asks how to fix a finding; nothing is run or changed: "
         "show the plan to the user, applying it is theirs."),
    Tool("triage", "triage", triage,
         "Judge the environment a bug report shows (`fwdoctor triage FILE --json`): paste an issue body, "
         "collect_env output, nvidia-smi, nvcc -V, pip/conda list or error text such as 'found version 11040'. "
         "Returns the check document of what the report states, and the fragments recognised. What the report "
         "does not show is 'not checked', never guessed. Use it on text from a user or an issue, not on this host."),
    Tool("fleet_report", "fleet", fleet_report,
         "Compare many nodes (`fwdoctor fleet report PATH... --json`): facts, check and smoke documents in files or "
         "folders become one row per node, drift per column ('999 nodes alike; node-0417: driver 550...'), and "
         "cross-node and per-node findings. Use it when a cluster's nodes disagree or one node is slow. Paths must "
         "lie within the folders the user allowed."),
)
BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}


def call(ctx: Context, name: str, args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run tool `name` on `args` (already checked against its input schema); ToolError with
    one line for anything that stops it, never a traceback."""
    tool = BY_NAME.get(name)
    if tool is None:
        raise ToolError(f"unknown tool {name!r}; tools/list shows them")
    try:
        return tool.run(ctx, dict(args or {}))
    except ToolError:
        raise
    except click.ClickException as exc:  # DoctorError and bad values: the CLI's own one line
        raise ToolError(exc.format_message().splitlines()[0] if exc.format_message() else type(exc).__name__) from None
    except SystemExit as exc:
        raise ToolError(f"{name} stopped (exit {exc.code})") from None
    except Exception as exc:  # a bug: one line, as the CLI's last resort reports it
        raise ToolError(f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (please report this)") from None
