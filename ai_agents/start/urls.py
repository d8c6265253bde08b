"""The start page, mounted at / by erp.urls (by string: erp never imports ai_agents)."""

from django.urls import path

from ai_agents.start import views

urlpatterns = [path("", views.start_page, name="home")]
