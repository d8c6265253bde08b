"""Knowledge-base routes, included under /api/v1/ by erp/urls.py (by string, not import)."""

from django.urls import path

from ai_agents.api import views

urlpatterns = [
    path("knowledge-bases", views.KnowledgeBaseListView.as_view(), name="kb-list"),
    path("knowledge-bases/<str:kb_id>", views.KnowledgeBaseDetailView.as_view(), name="kb-detail"),
    path(
        "knowledge-bases/<str:kb_id>/documents",
        views.DocumentListView.as_view(),
        name="kb-document-list",
    ),
    path(
        "knowledge-bases/<str:kb_id>/documents/<str:doc_id>",
        views.DocumentDetailView.as_view(),
        name="kb-document-detail",
    ),
    path(
        "knowledge-bases/<str:kb_id>/documents/<str:doc_id>/reindex",
        views.DocumentReindexView.as_view(),
        name="kb-document-reindex",
    ),
    path("knowledge-bases/<str:kb_id>/search", views.SearchView.as_view(), name="kb-search"),
]

from ai_agents.api import agents as agent_views  # noqa: E402

urlpatterns += [
    path("agents", agent_views.AgentListView.as_view(), name="agent-list"),
    path("agents/<str:agent_id>", agent_views.AgentDetailView.as_view(), name="agent-detail"),
]

from ai_agents.api import conversations as conversation_views  # noqa: E402

urlpatterns += [
    path(
        "agents/<str:agent_id>/messages",
        agent_views.AgentMessageView.as_view(),
        name="agent-messages",
    ),
    path(
        "conversations", conversation_views.ConversationListView.as_view(), name="conversation-list"
    ),
    path(
        "conversations/<str:conversation_id>",
        conversation_views.ConversationDetailView.as_view(),
        name="conversation-detail",
    ),
]

from ai_agents.api import handoff as handoff_views  # noqa: E402

urlpatterns += [
    path(
        f"conversations/<str:conversation_id>/{name}",
        view.as_view(),
        name=f"conversation-{name}",
    )
    for name, view in (
        ("claim", handoff_views.ClaimView),
        ("takeover", handoff_views.TakeoverView),
        ("reply", handoff_views.ReplyView),
        ("release", handoff_views.ReleaseView),
        ("close", handoff_views.CloseView),
    )
]

from ai_agents.api import canned_replies as canned_views  # noqa: E402
from ai_agents.api import contacts as contact_views  # noqa: E402
from ai_agents.api import notes as note_views  # noqa: E402

urlpatterns += [
    path(
        "conversations/<str:conversation_id>/assign",
        note_views.AssignView.as_view(),
        name="conversation-assign",
    ),
    path(
        "conversations/<str:conversation_id>/notes",
        note_views.NoteView.as_view(),
        name="conversation-notes",
    ),
    path(
        "conversations/<str:conversation_id>/read",
        note_views.ReadView.as_view(),
        name="conversation-read",
    ),
    path("contacts/<str:contact_id>", contact_views.ContactDetailView.as_view(), name="contact"),
    path("canned-replies", canned_views.CannedReplyListView.as_view(), name="canned-list"),
    path(
        "canned-replies/<str:reply_id>",
        canned_views.CannedReplyDetailView.as_view(),
        name="canned-detail",
    ),
    path(
        "canned-replies/<str:reply_id>/render",
        canned_views.CannedReplyRenderView.as_view(),
        name="canned-render",
    ),
]

from ai_agents.api import feedback as feedback_views  # noqa: E402

urlpatterns += [
    path(
        "conversations/<str:conversation_id>/feedback",
        feedback_views.FeedbackView.as_view(),
        name="conversation-feedback",
    ),
]

from ai_agents.api import typing as typing_views  # noqa: E402

urlpatterns += [
    path(
        "conversations/<str:conversation_id>/typing",
        typing_views.StaffTypingView.as_view(),
        name="conversation-typing",
    ),
]

from ai_agents.api import channels as channel_views  # noqa: E402

urlpatterns += [
    path("channels", channel_views.ChannelListView.as_view(), name="channel-list"),
    path(
        "channels/<str:channel_id>",
        channel_views.ChannelDetailView.as_view(),
        name="channel-detail",
    ),
]

from ai_agents.api import agent_tests as agent_test_views  # noqa: E402

urlpatterns += [
    path(
        "agents/<str:agent_id>/test",
        agent_test_views.AgentPlaygroundView.as_view(),
        name="agent-playground",
    ),
    path(
        "agents/<str:agent_id>/tests",
        agent_test_views.AgentTestListView.as_view(),
        name="agent-test-list",
    ),
    path(
        "agents/<str:agent_id>/tests/run",
        agent_test_views.AgentTestRunView.as_view(),
        name="agent-test-run",
    ),
    path(
        "agents/<str:agent_id>/tests/runs/<str:run_id>",
        agent_test_views.AgentTestRunDetailView.as_view(),
        name="agent-test-run-detail",
    ),
    path(
        "agents/<str:agent_id>/tests/<str:case_id>",
        agent_test_views.AgentTestDetailView.as_view(),
        name="agent-test-detail",
    ),
]

from ai_agents.api import stats as stats_views  # noqa: E402

urlpatterns += [
    path("stats", stats_views.StatsView.as_view(), name="stats"),
    path(
        "stats/conversations.csv",
        stats_views.StatsConversationsView.as_view(),
        name="stats-conversations",
    ),
]

from ai_agents.api import whatsapp_templates as template_views  # noqa: E402

urlpatterns += [
    path(
        "conversations/<str:conversation_id>/templates",
        template_views.ConversationTemplatesView.as_view(),
        name="conversation-templates",
    ),
    path(
        "conversations/<str:conversation_id>/template",
        template_views.TemplateSendView.as_view(),
        name="conversation-template-send",
    ),
]
