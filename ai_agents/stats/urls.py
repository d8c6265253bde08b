"""Statistics pages, mounted at /stats/ by erp.urls (by string: erp never imports ai_agents)."""

from django.urls import path

from ai_agents.stats import views

urlpatterns = [
    path("", views.stats_page, name="stats"),
    path("stats.csv", views.stats_page_csv, name="stats-csv"),
    path("conversations.csv", views.stats_conversations_csv, name="stats-conversations-csv"),
]
