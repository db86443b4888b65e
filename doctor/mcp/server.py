"""The MCP SDK's low-level server around fwdoctor.mcp.tools: tools/list gives each tool its
input schema (doctor/schemas/mcp-tools.json) and its output schema (the document's own,
self-contained), tools/call returns the document as structured content and as JSON text.

The low-level server rather than the SDK's decorator API: the schemas are the project's
JSON Schema files, not ones derived from Python signatures. Imported only by
`fwdoctor mcp`, after it checked that the `mcp` extra is installed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import types
from jsonschema import Draft202012Validator
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from fwdoctor import __version__
from fwdoctor.mcp.tools import TOOLS, Context, ToolError, call, input_schema, output_schema

INSTRUCTIONS = (
    "fwdoctor diagnoses deep-learning GPU environments (NVIDIA driver, GPUs, CUDA toolkit, torch, jax, "
    "tensorflow, cuDNN, NCCL, Python) from a sourced knowledge base. Call check before guessing from "
    "nvidia-smi or pip output; explain a finding before acting on it; select before recommending a wheel; "
    "plan_fix shows a fix as a dry run whose apply command is the user's to run. Every tool is read-only."
)
# Hints for clients: nothing changes the host, the same call gives the same answer, and the
# answers come from this machine and the files named, not from the network.
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def build(ctx: Context) -> Server[Any]:
    listed = [
        types.Tool(name=tool.name, description=tool.description, input_schema=input_schema(tool.name),
                   output_schema=output_schema(tool.kind), annotations=READ_ONLY)
        for tool in TOOLS
    ]
    validators = {tool.name: Draft202012Validator(tool.input_schema) for tool in listed}
    # One call at a time, in a worker thread: the probes block (files, child processes with
    # their own timeouts) and the protocol loop keeps answering meanwhile.
    limiter = anyio.CapacityLimiter(1)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        try:
            validator = validators.get(params.name)
            if validator is None:
                raise ToolError(f"unknown tool {params.name!r}; tools/list shows them")
            problem = next(iter(sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))), None)
            if problem is not None:
                where = "/".join(str(p) for p in problem.absolute_path)
                raise ToolError(f"{params.name}: {where + ': ' if where else ''}{problem.message}")
            document = await anyio.to_thread.run_sync(call, ctx, params.name, args, limiter=limiter)
        except ToolError as exc:
            return types.CallToolResult(content=[types.TextContent(text=f"fwdoctor: {exc}")], is_error=True)
        text = json.dumps(document, indent=2)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=document)

    return Server("fwdoctor", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio(ctx: Context) -> None:
    server = build(ctx)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_http(ctx: Context, port: int) -> None:
    """Streamable HTTP on 127.0.0.1 only (the SDK turns on its DNS-rebinding protection for
    a loopback host): an assistant on this machine, never the network."""
    import uvicorn

    app = build(ctx).streamable_http_app(host="127.0.0.1")
    print(f"fwdoctor: MCP over streamable HTTP at http://127.0.0.1:{port}/mcp", file=sys.stderr)
    uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).run()
