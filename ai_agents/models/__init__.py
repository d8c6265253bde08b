from ai_agents.models.agents import Agent, Contact, Conversation, Message
from ai_agents.models.knowledge import Chunk, Document, KnowledgeBase

__all__ = [
    "Agent",
    "Chunk",
    "Contact",
    "Conversation",
    "Document",
    "KnowledgeBase",
    "Message",
]
