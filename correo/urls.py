"""correo pages, mounted at /correo/ by erp.urls (by string: erp never imports correo).

The staff chat page and the Zoho connect flow; the API lives in `correo.api.urls`
(`/api/correo/`).
"""

from django.urls import include, path

from correo import views
from correo.zoho.urls import zoho_urlpatterns

urlpatterns = [
    path("", views.chat_page, name="correo-chat"),
    path("", include(zoho_urlpatterns)),
]
