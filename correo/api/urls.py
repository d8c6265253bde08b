from django.urls import path

from correo.api import views

urlpatterns = [path("ask", views.AskView.as_view(), name="correo-ask")]
