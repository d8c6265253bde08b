"""The Graph API calls the WhatsApp channel makes: send a message, mark as read + typing.

Through `erp.http.client.HttpClient` (timeouts, redaction, no redirects). The base URL is the
operator's `WHATSAPP_GRAPH_BASE_URL` (version included), not a tenant's, so the SSRF guard is
off like for the Zoho client. Graph errors are read by `error.code`, never by message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from django.conf import settings

from erp.http.client import HttpClient, HttpResponse
from erp.http.errors import HttpConnectionError, HttpError, HttpTimeout
from erp.retry import Attempts, Backoff

logger = logging.getLogger(__name__)

TIMEOUT = (3.05, 15.0)
TYPING_TIMEOUT = (2.0, 3.0)  # best effort: never holds the answer back for long
# Throughput (130429), pair rate limit (131056), app/WABA rate limits: wait and try again.
RETRYABLE_CODES = frozenset({"130429", "131056", "80007", "4", "2"})


@dataclass(frozen=True)
class GraphResult:
    ok: bool
    external_id: str = ""
    error_code: str = ""
    error_message: str = ""
    retryable: bool = False
    attempts: int = 1
    data: Any = None


class GraphClient(HttpClient):
    keep_alive = True  # every reply and typing indicator: one connection, not a handshake each

    def __init__(self, *, access_token: str, base_url: str | None = None) -> None:
        base = (base_url or settings.WHATSAPP_GRAPH_BASE_URL or "").rstrip("/")
        super().__init__(base_url=base, timeout=TIMEOUT)
        self._token = access_token

    def default_headers(self) -> dict[str, str]:
        return {**super().default_headers(), "Authorization": f"Bearer {self._token}"}

    def messages_post(
        self,
        *,
        phone_number_id: str,
        body: Mapping[str, Any],
        timeout: tuple[float, float] | None = None,
    ) -> GraphResult:
        """One POST to `/{phone_number_id}/messages`; never raises for HTTP or Graph errors."""
        path = f"{self.base_url}/{quote(phone_number_id, safe='')}/messages"
        try:
            response = self.post(path, json=dict(body), raise_for_status=False, timeout=timeout)
        except HttpTimeout:
            # The message may have left: sending again could duplicate it. Not retried.
            return GraphResult(False, error_code="timeout", error_message="Graph API timeout")
        except HttpConnectionError as exc:
            return GraphResult(
                False, error_code="connection", error_message=str(exc)[:300], retryable=True
            )
        except HttpError as exc:
            return GraphResult(False, error_code="http", error_message=str(exc)[:300])
        result = _answer(response)
        if not result.ok:
            return result
        ids = [m.get("id") for m in result.data.get("messages") or [] if isinstance(m, dict)]
        return replace(result, external_id=str(ids[0]) if ids else "")

    def json_get(self, path: str, *, params: Mapping[str, str]) -> GraphResult:
        """One GET of a JSON object (`data`); never raises. A read sends nothing, so any
        transport failure is `connection`; a non-2xx answer or a body that is not an object
        is read as a Graph error like a send's."""
        try:
            response = self.get(path, params=dict(params), raise_for_status=False)
        except HttpError as exc:
            return GraphResult(False, error_code="connection", error_message=str(exc)[:200])
        return _answer(response)


def _answer(response: HttpResponse) -> GraphResult:
    """A 2xx JSON object is the result's `data`; anything else is read as a Graph error."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if 200 <= response.status < 300 and isinstance(data, dict):
        return GraphResult(True, data=data)
    return _error_result(response.status, data)


def _error_result(status: int, data: Any) -> GraphResult:
    error = data.get("error") if isinstance(data, dict) else None
    error = error if isinstance(error, dict) else {}
    code = str(error.get("code") or f"http_{status}")
    details = error.get("error_data")
    details = details if isinstance(details, dict) else {}
    message = str(details.get("details") or error.get("message") or f"HTTP {status}")
    retryable = status >= 500 or status == 429 or code in RETRYABLE_CODES
    return GraphResult(False, error_code=code, error_message=message[:500], retryable=retryable)


def messages_post_with_retries(
    client: GraphClient,
    *,
    phone_number_id: str,
    body: Mapping[str, Any],
    attempts: int | None = None,
    base_delay: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> GraphResult:
    """Sends, retrying 5xx, throttling (130429) and the pair rate limit (131056) with
    exponential backoff (`WHATSAPP_SEND_ATTEMPTS`, `WHATSAPP_RETRY_BASE_MS`)."""
    backoff = Backoff(
        attempts=attempts or int(settings.WHATSAPP_SEND_ATTEMPTS),
        base_delay_s=settings.WHATSAPP_RETRY_BASE_MS / 1000 if base_delay is None else base_delay,
        max_delay_s=30.0,
    )
    loop = Attempts(backoff, sleep=sleep)
    while True:
        number = loop.begin()
        result = client.messages_post(phone_number_id=phone_number_id, body=body)
        result = GraphResult(**{**result.__dict__, "attempts": number})
        wait = None if result.ok else loop.retry_wait(retryable=result.retryable)
        if wait is None:
            return result
        logger.info(
            "whatsapp.send_retry",
            extra={"attempt": number, "error_code": result.error_code, "wait_s": wait},
        )
        loop.pause(wait)
