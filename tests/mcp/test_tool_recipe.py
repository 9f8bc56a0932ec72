"""docs/architecture.md, "Recipe: an MCP tool": a tool written the recipe's
way — a `@tool` method whose signature is its schema, answering
`ToolOutput[X]` — is listed with the schemas its signature declares (the
configured spaces in `space`'s) and called like the others."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from pydantic import Field

from notarium_search import params
from notarium_search.mcp.server import READ_ONLY, build_server
from notarium_search.mcp.tools import Limit, NotesTools, Space, ToolFailure, ToolOutput, tool
from notarium_search.types import FeedFilter
from tests.conftest import Vault


@dataclass(frozen=True, slots=True)
class TaggedOutput:
    space: str
    tag: str
    ids: list[str]


class TaggedTools(NotesTools):
    @tool("Notes by tag", "The ids of the notes with a tag, most recently updated first.")
    def list_tagged(
        self,
        tag: Annotated[str, Field(min_length=1, max_length=100, description="The tag, without #")],
        space: Space = None,
        limit: Limit = 10,
    ) -> ToolOutput[TaggedOutput]:
        name = self.space_name(space)
        if tag.startswith("#"):
            raise ToolFailure("give the tag without its #")
        page = self.service.notes(name, FeedFilter(tags=params.tags([tag])), limit, None)
        ids = [record.note.id for record in page.items]
        return ToolOutput(f"{len(ids)} notes tagged {tag}: {', '.join(ids)}", TaggedOutput(name, tag, ids))


def test_a_tool_written_the_recipes_way(vault: Vault):
    vault.write("a.md", "---\nid: a\ntags: [ia]\nupdated: 2025-01-01\n---\nUn.\n")
    vault.write("b.md", "---\nid: b\ntags: [ia]\nupdated: 2025-02-01\n---\nDeux.\n")
    service = vault.service()
    server = build_server(service, tools=TaggedTools(service))

    async def checks() -> None:
        listed = {t.name: t for t in await server.list_tools()}
        assert list(listed)[-1] == "list_tagged"  # after the five of NotesTools
        assert len(listed) == 6
        new = listed["list_tagged"]
        assert (new.title, new.description) == (
            "Notes by tag",
            "The ids of the notes with a tag, most recently updated first.",
        )
        arguments: dict[str, Any] = new.input_schema
        assert arguments["required"] == ["tag"]
        assert arguments["properties"]["tag"] == {
            "description": "The tag, without #",
            "maxLength": 100,
            "minLength": 1,
            "title": "Tag",
            "type": "string",
        }
        assert arguments["properties"]["space"]["enum"] == ["notes", None]  # the configured spaces
        assert arguments["properties"]["limit"]["maximum"] == 100
        assert new.output_schema is not None
        assert set(new.output_schema["properties"]) == {"space", "tag", "ids"}
        assert new.annotations == READ_ONLY

        answer = await server.call_tool("list_tagged", {"tag": "ia"})
        assert isinstance(answer, CallToolResult)
        assert answer.structured_content == {"space": "notes", "tag": "ia", "ids": ["b", "a"]}
        assert answer.content[0].text == "2 notes tagged ia: b, a"  # type: ignore[union-attr]
        for arguments_given, said in (
            ({"tag": "#ia"}, "give the tag without its #"),  # ToolFailure
            ({"tag": ""}, "invalid arguments: tag: String should have at least 1 character"),  # its Field
            ({"tag": "ia", "space": "nope"}, "unknown space 'nope'"),
        ):
            with pytest.raises(ToolError, match=re.escape(said)):  # the answer's isError and text
                await server.call_tool("list_tagged", arguments_given)

    anyio.run(checks)
