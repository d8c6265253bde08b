"""A streamed response over a synchronous iterator (database rows) that ASGI streams too.

Django's `StreamingHttpResponse`, served under ASGI (uvicorn, our server), collects a
synchronous iterator into one list before sending a byte ("must consume synchronous
iterators"): a year of conversations exported as CSV would sit in memory whole. This one
pulls `PARTS_PER_PULL` parts at a time in the request's own sync thread (`thread_sensitive`:
the thread that ran the view, whose database connection holds the rows' server-side cursor)
and sends each batch before reading the next. Under WSGI it is Django's, unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

PARTS_PER_PULL = 100  # CSV lines per hop to the sync thread (one send to the client each)


def _take(parts: Iterator[bytes], count: int) -> list[bytes]:
    return list(islice(parts, count))


class RowsStreamingHttpResponse(StreamingHttpResponse):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.is_async:  # an async iterator: Django's own path
            async for part in super().__aiter__():
                yield part
            return
        parts: Any = self.streaming_content  # make_bytes over the iterator, read once
        pull = sync_to_async(_take, thread_sensitive=True)
        while batch := await pull(parts, PARTS_PER_PULL):
            yield b"".join(batch)
