"""correo pages, mounted at /correo/ by erp.urls (by string: erp never imports correo)."""

from django.urls import include, path

from correo.zoho.urls import zoho_urlpatterns

urlpatterns = [
    path("", include(zoho_urlpatterns)),
]
