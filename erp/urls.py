from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from erp import views
from erp.llm import api as llm_api
from erp.tenancy import api as tenancy_api

api_v1 = [
    path("tenant", tenancy_api.CurrentTenantView.as_view(), name="tenant-current"),
    path("api-keys", tenancy_api.ApiKeyListView.as_view(), name="apikey-list"),
    path("api-keys/<int:key_id>", tenancy_api.ApiKeyDetailView.as_view(), name="apikey-detail"),
    path("usage", llm_api.UsageView.as_view(), name="usage"),
]

urlpatterns = [
    # First: every POST Meta and the mail relay send resolves through this list.
    path("webhooks/email/", include("ai_agents.channels.email.urls")),
    path("webhooks/", include("ai_agents.channels.whatsapp.urls")),
    path("", include("ai_agents.start.urls")),  # the staff start page (name "home")
    path("healthz", views.healthz, name="healthz"),
    path("", include("erp.tenancy.team.urls")),  # /team/<slug>/, /password/set/...
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include(api_v1)),
    path("api/v1/", include("ai_agents.api.urls")),
    path("api/correo/", include("correo.api.urls")),
    path("correo/", include("correo.urls")),
    path("", include("ai_agents.channels.webchat.urls")),  # /widget.js, /api/webchat/...
    path("inbox/", include("ai_agents.inbox.urls")),
    path("stats/", include("ai_agents.stats.urls")),
]

handler404 = "erp.api.handlers.not_found"
handler500 = "erp.api.handlers.server_error"
