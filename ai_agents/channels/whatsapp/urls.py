from django.urls import re_path

from ai_agents.channels.whatsapp.views import whatsapp_webhook

urlpatterns = [
    # Meta's dashboard accepts the URL with or without the trailing slash.
    re_path(r"^whatsapp/?$", whatsapp_webhook, name="webhook-whatsapp"),
]
