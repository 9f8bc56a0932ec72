"""Feed cursors: where a page ended, signed so that only cursors this space
issued are accepted.

A cursor is (version, feed key, note id) and an HMAC of them under the
space's cursor key. Unsigned, a well-formed cursor that was never issued
(any key, any id) was answered 200 with an empty or arbitrary page instead of
400; the range check of the key stays, for the day a key leaks. The key is
kept in the space's index folder (index/folder.py), so cursors outlive a
restart; a folder made anew makes a new key (old cursors: 400, start again).
Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

import msgspec

from notarium_search.lexical.schema import FEED_KEY_MAX, FEED_KEY_MIN

CURSOR_VERSION = 3  # 1 ordered by the second, 2 was unsigned: both refused, the client starts again
MAC_BYTES = 16  # 128 bits: forging one is guessing it
KEY_BYTES = 32


class InvalidCursor(ValueError):
    """The feed cursor was not produced by this service (or not for this space)."""


class CursorCodec:
    def __init__(self, key: bytes) -> None:
        if len(key) < KEY_BYTES:
            raise ValueError(f"a cursor key has at least {KEY_BYTES} bytes")
        self.key = key

    def encode(self, feed_key: int, note_id: str) -> str:
        payload = msgspec.json.encode([CURSOR_VERSION, feed_key, note_id])
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def decode(self, cursor: str) -> tuple[int, str]:
        """The (feed key, id) a page ended at; InvalidCursor for anything this
        codec did not issue."""
        text, _, mac = cursor.partition(".")
        try:
            payload, signature = _unb64(text), _unb64(mac)
        except (binascii.Error, ValueError) as exc:
            raise InvalidCursor("cursor is not valid: start again without it") from exc
        if not hmac.compare_digest(signature, self._mac(payload)):
            raise InvalidCursor(
                "cursor was not issued by this service for this space (or is from an older version):"
                " start again without it"
            )
        try:
            version, feed_key, note_id = msgspec.json.decode(payload, type=tuple[int, int, str])
        except msgspec.DecodeError as exc:  # signed by us, so only an older layout could get here
            raise InvalidCursor("cursor is from an older version: start again without it") from exc
        if version != CURSOR_VERSION or not FEED_KEY_MIN <= feed_key <= FEED_KEY_MAX:
            raise InvalidCursor("cursor is from an older version: start again without it")
        return feed_key, note_id

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest()[:MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    if not text:
        raise ValueError("empty")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
