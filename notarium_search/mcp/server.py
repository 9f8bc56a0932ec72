"""The MCP server: notarium's tools for assistants, two ways — over stdio
(`notarium-search mcp`, started as a subprocess by desktop assistants and
coding agents) and over Streamable HTTP at /mcp on the running service
(routed by api/app.py, behind the API's bearer token). docs/mcp.md. The stdio
transport's input, which answers malformed lines, is mcp/stdio.py.

The tools are declared in mcp/tools.py, each once: the SDK builds a tool's
JSON schemas from its method's signature, as `register` hands it over —
`space` given the configured spaces, the answer a `CallToolResult` checked
against the tool's output class.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any, get_args, get_origin

import anyio
import mcp.server.mcpserver.server as sdk_server
import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo

from notarium_search import __version__
from notarium_search.errors import NotariumError
from notarium_search.logsetup import get_logger
from notarium_search.mcp.outputs import schema_model
from notarium_search.mcp.stdio import AnsweringReader, CheckedStdin, protocol_stdin
from notarium_search.mcp.tools import SPACE, NotesTools, ToolFailure, ToolOutput, ToolSpec, declared_tools
from notarium_search.service import Service
from notarium_search.settings import Settings

SERVER_NAME = "notarium-search"
SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"
SHOWN_INPUT_CHARS = 80  # of a rejected argument value, in the error message

# Every tool only reads the notes: clients may call them without asking the user.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

log = get_logger(__name__)


def _logging_is_the_services(*_: object, **__: object) -> None:
    """In place of the SDK's `configure_logging`, which each MCPServer calls:
    a `logging.basicConfig` with rich's handler when rich is installed (it is,
    for the CLI's progress bars). basicConfig does nothing once the root
    logger has a handler, and the service's is set first (logsetup.py); the
    handler made for nothing loaded rich and pygments in every worker, ~4 MiB
    (lean_imports.py)."""


sdk_server.configure_logging = _logging_is_the_services  # type: ignore[attr-defined]  # its name there, looked up at each call


class NotesServer(MCPServer[Any]):
    """The SDK's server with argument errors stated briefly: which argument and
    why, instead of pydantic's multi-line report with documentation links; and,
    over stdio, malformed input answered (AnsweringReader)."""

    async def run_stdio_async(self) -> None:
        """MCPServer.run_stdio_async (the SDK's stdio transport, its claim of
        fd 1 included), reading stdin through CheckedStdin (fd 0 claimed by
        protocol_stdin) and the read stream through AnsweringReader."""
        with protocol_stdin() as wire:
            stdin = CheckedStdin(wire)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                stdin.answer_on(write_stream)
                lowlevel = self._lowlevel_server  # what the SDK's own run_stdio_async runs: no public accessor
                await lowlevel.run(
                    AnsweringReader(read_stream, write_stream), write_stream, lowlevel.create_initialization_options()
                )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: invalid arguments: {_brief(cause)}") from cause


def build_server(
    service: Service,
    lifespan: Callable[[MCPServer[Any]], AbstractAsyncContextManager[None]] | None = None,
    tools: NotesTools | None = None,
) -> NotesServer:
    """Every tool `tools` declares (mcp/tools.py; NotesTools over `service` by
    default) over `service`; `lifespan` wraps the server's run (stdio)."""
    tools = tools or NotesTools(service)
    server = NotesServer(SERVER_NAME, version=__version__, instructions=_instructions(service), lifespan=lifespan)
    space_field = _space_field(tools.space_names)
    for name, spec in declared_tools(tools).items():
        register(server, name, spec, getattr(tools, name), space_field)
    return server


def register(
    server: MCPServer[Any], name: str, spec: ToolSpec, method: Callable[..., ToolOutput[Any]], space_field: FieldInfo
) -> None:
    """The tool `method` declares, as the SDK reads a tool: a function whose
    signature is the method's (its arguments, `space` given `space_field`),
    answering a CallToolResult published and checked as the method's
    `ToolOutput[X]` says (X: mcp/outputs.py)."""
    declared = inspect.signature(method, eval_str=True)  # bound: without self
    output = get_args(declared.return_annotation)[0]
    arguments = [
        argument.replace(annotation=_with_space(argument.annotation, space_field))
        for argument in declared.parameters.values()
    ]

    def call(**given: Any) -> CallToolResult:
        return _answer(lambda: method(**given))

    answer = Annotated[CallToolResult, schema_model(output)]
    call.__name__ = call.__qualname__ = name  # the SDK names the arguments' schema after it
    call.__signature__ = declared.replace(parameters=arguments, return_annotation=answer)  # type: ignore[attr-defined]
    call.__annotations__ = {argument.name: argument.annotation for argument in arguments} | {"return": answer}
    server.add_tool(call, name=name, title=spec.title, description=spec.description, annotations=READ_ONLY)


def _with_space(annotation: Any, space_field: FieldInfo) -> Any:
    """`annotation`, its SPACE marker (mcp/tools.py) replaced by `space_field`."""
    if get_origin(annotation) is not Annotated or SPACE not in annotation.__metadata__:
        return annotation
    kind, *metadata = get_args(annotation)
    return Annotated[(kind, *(space_field if item is SPACE else item for item in metadata))]


def _answer(work: Callable[[], ToolOutput[Any]]) -> CallToolResult:
    """A tool's output as text plus structured content (API bodies, datetimes
    as JSON values); the caller's mistakes and the service's refusals (unknown
    note, index repairing…) as tool errors."""
    try:
        output = work()
    except (ToolFailure, NotariumError) as exc:
        raise ToolError(str(exc)) from exc
    data = msgspec.to_builtins(output.data)
    return CallToolResult(content=[TextContent(type="text", text=output.text)], structured_content=data)


def _brief(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        shown = "" if item["type"] == "missing" else f" (got {repr(item.get('input'))[:SHOWN_INPUT_CHARS]})"
        parts.append(f"{where}: {item['msg']}{shown}")
    return "; ".join(parts)


def _space_field(names: list[str]) -> FieldInfo:
    """The `space` argument: its schema lists the configured spaces (an enum a
    client can offer), while an unknown name still gets the tools' own answer
    naming the spaces (mcp/tools.py), not a bare validation error."""

    def enum(schema: dict[str, Any]) -> None:
        schema.pop("anyOf", None)
        schema["type"] = ["string", "null"]
        schema["enum"] = [*names, None]

    field: FieldInfo = Field(description=_space_help(names), json_schema_extra=enum if names else None)
    return field


def _space_help(names: list[str]) -> str:
    if len(names) == 1:
        return f"The space (a folder of notes): {names[0]}, the only one, is used when omitted"
    return f"The space (a folder of notes), required: one of {', '.join(names)}"


def _instructions(service: Service) -> str:
    unopened = service.unopened()
    spaces = ", ".join(
        f"{c.name} ({'/'.join(c.analyzed)})"
        if c.name not in unopened
        else f"{c.name} (could not open: {unopened[c.name]})"
        for c in service.settings.spaces
    )
    return (
        f"Search and read the user's Markdown notes (Obsidian/Zettelkasten vaults). Spaces: {spaces}. "
        "Start with search_notes; open a note with get_note; get_related surfaces notes that resonate with one; "
        "query_frontmatter lists notes by tags and frontmatter fields; list_recent_activations tells which notes "
        "were used (published) lately. Every tool only reads."
    )


# -- the two transports -------------------------------------------------------


def session_manager(service: Service, settings: Settings) -> StreamableHTTPSessionManager:
    """The manager of MCP over Streamable HTTP, stateless with JSON answers:
    every POST carries its own request (no server-side sessions to expire or to
    pin to one worker), and the tools never call back into the client.
    `settings` are the app's (its token decides the DNS-rebinding protection).
    mcp/route.py routes /mcp to it and runs it."""
    # Stateless transports log "Terminating session: None" at info after every
    # request: noise beside the access log. Its warnings still show.
    logging.getLogger(SDK_TRANSPORT_LOGGER).setLevel(logging.WARNING)
    server = build_server(service)
    server.streamable_http_app(
        stateless_http=True, json_response=True, transport_security=_transport_security(settings)
    )
    return server.session_manager  # the Starlette app made above is not used: Litestar routes to the manager


def _transport_security(settings: Settings) -> TransportSecuritySettings:
    """The SDK's own Host and Origin checks stay off: api/exposure.py checks
    every route, /mcp included, against the same names as the rest of the
    service (loopback, the bound address, `allowed_hosts`) and refuses
    cross-site POSTs. The SDK's list would contradict `allowed_hosts` behind
    a proxy. It still validates the Content-Type of every POST."""
    del settings  # the same policy whatever the settings: see api/exposure.py
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def run_stdio(settings: Settings) -> None:
    """Serve the tools over stdin/stdout until the client closes stdin. The
    service indexes, watches and repairs as under `serve`; it starts once the
    SDK has moved fd 1 to stderr, so nothing but protocol reaches stdout."""
    service = Service(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(service.start)  # the client's initialize is answered meanwhile
        log.info("mcp_stdio_started", spaces=list(service.spaces))
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.stop)

    anyio.run(build_server(service, lifespan).run_stdio_async)
