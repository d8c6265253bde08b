"""Test URLconf: the real routes plus views that fail on purpose."""

from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_POST
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.response import Response

from erp.api.views import TenantAPIView
from erp.urls import handler404, handler500  # noqa: F401
from erp.urls import urlpatterns as real_urlpatterns


def boom(request):
    raise RuntimeError("kaboom with secret sk-should-not-leak")


def database_gone(request):
    from django.db import OperationalError

    raise OperationalError("server closed the connection unexpectedly")


def statement_timeout(request):
    import psycopg
    from django.db import OperationalError

    raise OperationalError("canceling statement") from psycopg.errors.QueryCanceled("canceling")


def redis_gone(request):
    import redis

    raise redis.ConnectionError("Error 111 connecting to /x/valkey.sock. Connection refused.")


@require_POST
def plain_webhook(request):
    return HttpResponse("ok")


@api_view(["POST"])
@authentication_classes([])
@permission_classes([])
def echo(request):
    return Response({"received": request.data})


class TenantBoom(TenantAPIView):
    """Fails after authentication, inside its tenant's scope."""

    def get(self, request):
        raise RuntimeError("a bug inside a tenant's request")


urlpatterns = [
    path("api/v1/tenant-boom", TenantBoom.as_view()),
    path("api/v1/boom", boom),
    path("api/v1/database-gone", database_gone),
    path("database-gone", database_gone),
    path("api/v1/redis-gone", redis_gone),
    path("api/v1/statement-timeout", statement_timeout),
    path("webhooks/boom", boom),
    path("webhooks/plain", plain_webhook),
    path("api/v1/echo", echo),
    path("api/v1/kb/1/documents", echo),
    *real_urlpatterns,
]
