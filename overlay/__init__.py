"""The application, grouped by concern (see the README's "Where things are"):

store/      the overlay database and its repositories (the only place with overlay SQL)
engine/     sync, scoring, audit, gate, check, search, maintenance
detect/     contradiction detection
writeback/  plan, apply and undo writes to a source
daemon/     the sidecar loop
output/     tables, report formats, publishing
cli/        the command line
api.py      the memwatch Python API;  mcp_server.py  the MCP server
"""
