from ai_agents.models.knowledge import Chunk, Document, KnowledgeBase

__all__ = ["Chunk", "Document", "KnowledgeBase"]
