"""The yardstick of bench/webhook_ack.py: a bare Django view doing what the WhatsApp webhook
cannot do less than (the same signature check over the raw body, JSON parsing, ONE INSERT into
a scratch table), served by uvicorn with the product's settings and middleware:

    uvicorn _bare_ack:application --app-dir bench

`POST /webhooks/bare`; every other URL is the product's (`/healthz`).
"""

from __future__ import annotations

import json
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
application = get_asgi_application()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import HttpRequest, HttpResponse, JsonResponse  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402

from ai_agents.channels.whatsapp.payload import signature_valid  # noqa: E402

TABLE = "bench_bare_ack"  # created by bench/webhook_ack.py (CREATE_TABLE)


@csrf_exempt
def bare_webhook(request: HttpRequest) -> HttpResponse:
    raw = request.body
    if not signature_valid(
        raw, request.headers.get("X-Hub-Signature-256"), settings.WHATSAPP_APP_SECRET
    ):
        return JsonResponse({"error": "invalid_signature"}, status=403)
    payload = json.loads(raw)
    wamid = payload["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (wamid, body) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [wamid, raw.decode()],
        )
    return JsonResponse({"status": "ok", "stored": 1})


urlpatterns = [path("webhooks/bare", bare_webhook), path("", include("erp.urls"))]
settings.ROOT_URLCONF = __name__
