from ai_agents.models.agent_tests import AgentTestCase, AgentTestRun
from ai_agents.models.agents import Agent, Contact, Conversation
from ai_agents.models.channels import ChannelBinding, Delivery, HandoffSettings
from ai_agents.models.inbox import (
    CannedReply,
    ConversationNote,
    ConversationRead,
    InboxPreference,
)
from ai_agents.models.knowledge import Chunk, Document, KnowledgeBase
from ai_agents.models.messages import Message
from ai_agents.models.tools import HttpTool
from ai_agents.models.whatsapp import (
    FollowupSent,
    TemplateFollowup,
    TemplateSend,
    WhatsAppTemplate,
)

__all__ = [
    "Agent",
    "AgentTestCase",
    "AgentTestRun",
    "CannedReply",
    "ChannelBinding",
    "Chunk",
    "Contact",
    "Conversation",
    "ConversationNote",
    "ConversationRead",
    "Delivery",
    "Document",
    "FollowupSent",
    "HandoffSettings",
    "HttpTool",
    "InboxPreference",
    "KnowledgeBase",
    "Message",
    "TemplateFollowup",
    "TemplateSend",
    "WhatsAppTemplate",
]
