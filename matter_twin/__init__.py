"""The application layer: the `twin` command line and the HTTP and MCP server assembly.

It sits above every other package and nothing imports it."""
