"""`fwdoctor mcp`: fwdoctor's read-only answers for coding assistants, over the Model Context
Protocol (the official `mcp` SDK, the `fwdoctor[mcp]` extra).

    fwdoctor.mcp.tools   the tool table, the path boundary, the calls (no SDK import)
    fwdoctor.mcp.server  the SDK glue: tools/list and tools/call on stdio or streamable HTTP

A front end beside fwdoctor.cli: it calls the same functions the commands call and returns
their JSON documents, so an assistant gets what `fwdoctor ... --json` prints, typed by the
schemas in doctor/schemas/.
"""
