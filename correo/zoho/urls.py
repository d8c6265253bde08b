from django.urls import path

from correo import views_zoho

zoho_urlpatterns = [
    path("zoho/connect", views_zoho.zoho_connect, name="correo-zoho-connect"),
    path("zoho/callback", views_zoho.zoho_callback, name="correo-zoho-callback"),
]
