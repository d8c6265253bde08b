"""Web chat routes, included at the root by erp/urls.py (by string, not import)."""

from django.urls import path

from ai_agents.channels.webchat import views

urlpatterns = [
    path("widget.js", views.widget_js, name="webchat-widget"),
    path("api/webchat/<str:key>/config", views.config_view, name="webchat-config"),
    path("api/webchat/<str:key>/sessions", views.session_view, name="webchat-sessions"),
    path("api/webchat/<str:key>/messages", views.messages_view, name="webchat-messages"),
    path("api/webchat/<str:key>/typing", views.typing_view, name="webchat-typing"),
    path("api/webchat/<str:key>/read", views.read_view, name="webchat-read"),
    path("api/webchat/<str:key>/rating", views.rating_view, name="webchat-rating"),
    path("webchat/demo", views.demo_page, name="webchat-demo"),
]
