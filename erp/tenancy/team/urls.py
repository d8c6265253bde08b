"""Team pages, mounted at / by erp.urls."""

from django.urls import path

from erp.tenancy.team import views

urlpatterns = [
    path("team/", views.team_first, name="team-first"),
    path("team/<slug:tenant_slug>/", views.team_page, name="team"),
    path("team/<slug:tenant_slug>/invite", views.team_invite, name="team-invite"),
    path(
        "team/<slug:tenant_slug>/members/<str:membership_id>/role",
        views.team_member_role,
        name="team-member-role",
    ),
    path(
        "team/<slug:tenant_slug>/members/<str:membership_id>/remove",
        views.team_member_remove,
        name="team-member-remove",
    ),
    path(
        "password/set/<uidb64>/<token>/",
        views.PasswordSetView.as_view(),
        name="team-password-set",
    ),
]
