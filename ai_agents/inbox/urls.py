"""Staff inbox pages, mounted at /inbox/ by erp.urls (by string: erp never imports ai_agents)."""

from django.urls import path

from ai_agents.inbox import alerts, list_views, live, media, views

urlpatterns = [
    path("", list_views.inbox_list, name="inbox"),
    path("contacts/<uuid:contact_id>", list_views.inbox_contact, name="inbox-contact"),
    path("live", live.inbox_live, name="inbox-live"),
    path("waiting", alerts.inbox_waiting, name="inbox-waiting"),
    path("preferences", alerts.inbox_preferences, name="inbox-preferences"),
    path("<uuid:conversation_id>", views.inbox_conversation, name="inbox-conversation"),
    path("<uuid:conversation_id>/events", views.inbox_events, name="inbox-events"),
    path("<uuid:conversation_id>/media/<uuid:message_id>", media.inbox_media, name="inbox-media"),
]
