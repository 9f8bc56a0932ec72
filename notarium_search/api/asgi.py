"""Plain ASGI types for the wrappers around the Litestar application
(exposure.Exposure, errors.UniformErrors): they pass any message through,
which Litestar's per-event TypedDicts cannot express."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
