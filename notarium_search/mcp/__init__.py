"""The MCP tools: the server (stdio and Streamable HTTP), the tools, their
text answers, and the /mcp route mounted in the HTTP app."""
