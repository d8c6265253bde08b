"""The inbound e-mail webhook, included under /webhooks/email/ by erp/urls.py (by string)."""

from django.urls import path

from ai_agents.channels.email import views as email_views

urlpatterns = [
    path("<str:token>", email_views.email_webhook, name="webhook-email"),
]
