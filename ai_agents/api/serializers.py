from __future__ import annotations

from django.core.validators import URLValidator
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from ai_agents.models import Document, KnowledgeBase


class KnowledgeBaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = KnowledgeBase
        fields = [
            "id",
            "name",
            "description",
            "embedding_provider",
            "embedding_model",
            "embedding_dimensions",
            "chunk_size",
            "chunk_overlap",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]


class KnowledgeBaseCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    embedding_provider = serializers.ChoiceField(
        choices=KnowledgeBase.Provider.choices, default=KnowledgeBase.Provider.LOCAL
    )
    embedding_model = serializers.CharField(max_length=100, required=False)
    embedding_dimensions = serializers.IntegerField(min_value=8, max_value=2000, required=False)
    chunk_size = serializers.IntegerField(min_value=32, max_value=1000, required=False)
    chunk_overlap = serializers.IntegerField(min_value=0, max_value=500, required=False)


class KnowledgeBaseUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    chunk_size = serializers.IntegerField(min_value=32, max_value=1000, required=False)
    chunk_overlap = serializers.IntegerField(min_value=0, max_value=500, required=False)


class DocumentSerializer(serializers.ModelSerializer):
    knowledge_base = serializers.UUIDField(source="knowledge_base_id", read_only=True)

    class Meta:
        model = Document
        fields = ["id", *Document.SHOWN_FIELDS]
        read_only_fields = fields


class TextDocumentSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=300)
    text = serializers.CharField(trim_whitespace=False)


class UploadDocumentSerializer(serializers.Serializer):
    """The form fields beside an uploaded file (CharField refuses NUL and lone surrogates)."""

    title = serializers.CharField(max_length=300, required=False, allow_blank=True)


class UrlDocumentSerializer(serializers.Serializer):
    url = serializers.CharField(
        max_length=2000, validators=[URLValidator(schemes=["http", "https"])]
    )
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)


class SearchSerializer(serializers.Serializer):
    query = serializers.CharField(max_length=2000)
    k = serializers.IntegerField(min_value=1, max_value=50, default=5)
    min_score = serializers.FloatField(min_value=0, max_value=1, required=False)


class SearchHitSerializer(serializers.Serializer):
    chunk_id = serializers.UUIDField()
    document_id = serializers.UUIDField()
    document_title = serializers.CharField()
    content = serializers.CharField()
    heading_path = serializers.ListField(child=serializers.CharField())
    score = serializers.FloatField(help_text=_("1.0 = primero en búsqueda vectorial y léxica."))
