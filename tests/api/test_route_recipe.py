"""docs/architecture.md, "Recipe: a route": a route written the recipe's way
— a controller's handler given the service (`ServiceDependency`), its
parameters annotated, a `bodies` shape returned, `errors` raised — is served
with the others' error bodies and listed in /schema with its parameters."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, get
from litestar.params import Parameter
from litestar.testing import TestClient

from notarium_search import params
from notarium_search.api import errors
from notarium_search.api.app import Limit, ServiceDependency, SpaceName, Tags, create_app
from notarium_search.bodies import NotesBody, note_record_out
from notarium_search.errors import InvalidParameter
from notarium_search.types import FeedFilter
from tests.conftest import Vault


class TaggedRoutes(Controller):
    path = "/"

    @get("/spaces/{space:str}/tagged", sync_to_thread=True, responses=errors.RESPONSES)
    def tagged(
        self,
        service: ServiceDependency,
        space: SpaceName,
        tag: Tags = None,
        limit: Limit = 20,
        newest: Annotated[bool, Parameter(description="Only the most recently updated note")] = False,
    ) -> NotesBody:
        """Notes with every one of these tags."""
        if not tag:
            raise InvalidParameter("tag: give at least one")
        page = service.notes(space, FeedFilter(tags=params.tags(tag)), 1 if newest else limit, None)
        return NotesBody([note_record_out(r) for r in page.items], page.next_cursor, page.partial)


def test_a_route_written_the_recipes_way(vault: Vault):
    vault.write("a.md", "---\nid: a\ntags: [ia]\nupdated: 2025-01-01\n---\nUn.\n")
    vault.write("b.md", "---\nid: b\ntags: [ia, dora]\nupdated: 2025-02-01\n---\nDeux.\n")
    service = vault.service()
    app = create_app(service.settings, service, start_indexing=False)
    app.register(TaggedRoutes)  # as listing it in create_app's route_handlers does
    with TestClient(app) as client:
        answer: Any = client.get("/spaces/notes/tagged", params={"tag": "ia"}).json()
        assert [note["id"] for note in answer["items"]] == ["b", "a"]
        assert [n["id"] for n in client.get("/spaces/notes/tagged?tag=ia&newest=true").json()["items"]] == ["b"]
        for path, status, code in (
            ("/spaces/notes/tagged", 400, "invalid_parameter"),  # raised by the handler
            ("/spaces/notes/tagged?tag=ia&limit=0", 400, "invalid_parameter"),  # its parameter's bound
            ("/spaces/nope/tagged?tag=ia", 404, "unknown_space"),  # raised by the service
        ):
            refused = client.get(path)
            assert (refused.status_code, refused.json()["error"]) == (status, code)
        operation = client.get("/schema/openapi.json").json()["paths"]["/spaces/{space}/tagged"]["get"]
        assert operation["description"] == "Notes with every one of these tags."
        documented = {p["name"]: p["description"] for p in operation["parameters"]}
        assert documented == {
            "space": "Space name (GET /spaces lists them)",
            "tag": "Tag (repeatable, all must match; nested tags included)",
            "limit": "Results to return (1-100)",
            "newest": "Only the most recently updated note",
        }  # the service is no parameter: it is given, not asked of the client
        assert set(operation["responses"]) >= {"200", "400", "404", "503"}
