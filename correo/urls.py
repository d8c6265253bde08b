"""The staff page (`/correo/`); the API lives in `correo.api.urls` (`/api/correo/`)."""

from django.urls import path

from correo import views
from correo.api.urls import urlpatterns as api_urlpatterns

app_name = "correo"
urlpatterns = [path("", views.chat_page, name="chat")]

__all__ = ["api_urlpatterns", "urlpatterns"]
