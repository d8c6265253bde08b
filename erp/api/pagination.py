from __future__ import annotations

from typing import Any

from rest_framework.pagination import CursorPagination
from rest_framework.response import Response


class CursorResultsPagination(CursorPagination):
    """`{"results": [...], "next": url|null}` as every list of the API (README: "HTTP API")."""

    ordering = "-id"
    page_size_query_param = "limit"
    max_page_size = 200

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"results": data, "next": self.get_next_link()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results", "next"],
            "properties": {
                "results": schema,
                "next": {"type": "string", "nullable": True, "format": "uri"},
            },
        }
