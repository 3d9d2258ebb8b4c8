"""Lists the tools of `recall mcp` with the official MCP Python SDK (what an MCP client sees).

Usage: list_tools.py [RECALL_BINARY] [-- EXTRA recall mcp ARGS...]
Example: .tools/venv/bin/python crates/recall-mcp/tests/client/list_tools.py target/release/recall
"""

import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    argv = sys.argv[1:]
    recall = argv[0] if argv and argv[0] != "--" else "recall"
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    params = StdioServerParameters(command=recall, args=["mcp", *extra])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(f"{init.server_info.name} {init.server_info.version}")
            for tool in (await session.list_tools()).tools:
                required = ", ".join(tool.input_schema.get("required", []))
                print(f"  {tool.name}({required}): {tool.description.split('.')[0]}")


anyio.run(main)
