from ai_agents.models.agents import Agent, Contact, Conversation, Message
from ai_agents.models.knowledge import Chunk, Document, KnowledgeBase
from ai_agents.models.tools import HttpTool

__all__ = [
    "Agent",
    "Chunk",
    "Contact",
    "Conversation",
    "Document",
    "HttpTool",
    "KnowledgeBase",
    "Message",
]
