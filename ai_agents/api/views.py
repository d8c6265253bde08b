from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, inline_serializer
from rest_framework import exceptions, mixins, parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.permissions import CanEditKnowledge
from ai_agents.api.serializers import (
    DocumentSerializer,
    KnowledgeBaseCreateSerializer,
    KnowledgeBaseSerializer,
    KnowledgeBaseUpdateSerializer,
    SearchHitSerializer,
    SearchSerializer,
    TextDocumentSerializer,
    UploadDocumentSerializer,
    UrlDocumentSerializer,
)
from ai_agents.models import Document, KnowledgeBase
from ai_agents.selectors.knowledge import document_list, knowledge_base_list, knowledge_search
from ai_agents.services import knowledge as services
from ai_agents.services import knowledge_documents
from ai_agents.services.knowledge_documents import DocumentAdded
from erp.api.views import TenantGenericAPIView
from erp.tenancy.models import Tenant
from erp.tenancy.selectors import access_tenant_object


def _access_kb(tenant: Tenant, kb_id: Any) -> KnowledgeBase:
    return access_tenant_object(KnowledgeBase, tenant, kb_id)


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "payload_too_large"


def _bad_request(exc: services.KnowledgeError) -> exceptions.APIException:
    if isinstance(exc, services.DocumentTooLarge):
        return PayloadTooLarge(str(exc))
    return exceptions.ValidationError({"detail": str(exc)})


class KnowledgeBaseListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = KnowledgeBaseSerializer

    def get_queryset(self) -> Any:
        return knowledge_base_list(tenant=self.tenant).order_by("-created_at")

    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=KnowledgeBaseCreateSerializer, responses={201: KnowledgeBaseSerializer})
    def post(self, request: Request) -> Response:
        form = KnowledgeBaseCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            kb = services.knowledge_base_create(tenant=self.tenant, **form.validated_data)
        except services.KnowledgeError as exc:
            raise _bad_request(exc) from None
        return Response(KnowledgeBaseSerializer(kb).data, status=status.HTTP_201_CREATED)


class KnowledgeBaseDetailView(TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = KnowledgeBaseSerializer

    def _kb(self, kb_id: Any) -> KnowledgeBase:
        return _access_kb(self.tenant, kb_id)

    def get(self, request: Request, kb_id: Any) -> Response:
        return Response(KnowledgeBaseSerializer(self._kb(kb_id)).data)

    @extend_schema(request=KnowledgeBaseUpdateSerializer, responses=KnowledgeBaseSerializer)
    def patch(self, request: Request, kb_id: Any) -> Response:
        kb = self._kb(kb_id)
        form = KnowledgeBaseUpdateSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        try:
            kb = services.knowledge_base_update(kb=kb, **form.validated_data)
        except services.KnowledgeError as exc:
            raise _bad_request(exc) from None
        return Response(KnowledgeBaseSerializer(kb).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, kb_id: Any) -> Response:
        services.knowledge_base_delete(kb=self._kb(kb_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = DocumentSerializer
    parser_classes = [parsers.JSONParser, parsers.MultiPartParser, parsers.FormParser]

    def get_queryset(self) -> Any:
        kb = _access_kb(self.tenant, self.kwargs["kb_id"])
        return document_list(kb=kb).order_by("-created_at")

    def get(self, request: Request, kb_id: Any) -> Response:
        return self.list(request)

    @extend_schema(
        request={
            "multipart/form-data": inline_serializer(
                "DocumentUpload", {"file": serializers.FileField()}
            ),
            "application/json": PolymorphicProxySerializer(
                "DocumentJson",
                serializers=[TextDocumentSerializer, UrlDocumentSerializer],
                resource_type_field_name=None,
            ),
        },
        responses={202: DocumentSerializer, 200: DocumentSerializer},
        summary="Añade un documento (archivo o texto); se procesa en segundo plano",
    )
    def post(self, request: Request, kb_id: Any) -> Response:
        kb = _access_kb(self.tenant, kb_id)
        if not isinstance(request.data, Mapping):  # a JSON body of null, a list, a number...
            raise exceptions.ValidationError(
                {"non_field_errors": [_("El cuerpo debe ser un objeto JSON.")]}
            )
        upload = request.FILES.get("file") if hasattr(request, "FILES") else None
        sources = [name for name in ("file", "url", "text") if name in request.data]
        if len(sources) > 1:
            # One source per document: never fetch a URL the caller may not have meant.
            message = _("Indique una sola fuente: file, url o text (recibidas: %(names)s).")
            raise exceptions.ValidationError(
                {"non_field_errors": [message % {"names": ", ".join(sources)}]}
            )
        if upload is None and "url" in request.data:
            url_form = UrlDocumentSerializer(data=request.data)
            url_form.is_valid(raise_exception=True)
            try:
                added = knowledge_documents.document_add_from_url(
                    kb=kb,
                    url=url_form.validated_data["url"],
                    title=url_form.validated_data.get("title", ""),
                )
            except knowledge_documents.DocumentFetchFailed as exc:
                raise _upstream_error(exc) from None
            except services.DocumentTooLarge as exc:
                raise _bad_request(exc) from None
            except services.KnowledgeError as exc:
                raise exceptions.ValidationError({"url": [str(exc)]}) from None
            return _added_response(added)
        try:
            if upload is not None:
                added = _add_upload(kb, upload, request.data)
            else:
                added = _add_text(kb, request)
        except services.KnowledgeError as exc:
            raise _bad_request(exc) from None
        return _added_response(added)


def _add_upload(kb: KnowledgeBase, upload: Any, data: Mapping[str, Any]) -> DocumentAdded:
    title = data.get("title", "") if isinstance(data, dict) else ""
    upload_form = UploadDocumentSerializer(data={"title": title})
    upload_form.is_valid(raise_exception=True)
    return knowledge_documents.document_add(
        kb=kb,
        data=upload.read(),
        filename=upload.name or "",
        mime_type=upload.content_type,
        title=upload_form.validated_data["title"] or upload.name or "",
        source=Document.Source.UPLOAD,
    )


def _add_text(kb: KnowledgeBase, request: Request) -> DocumentAdded:
    form = TextDocumentSerializer(data=request.data)
    if not form.is_valid():
        if "file" in request.data or request.content_type.startswith("multipart/"):
            raise exceptions.ValidationError({"file": [_("Adjunte un archivo.")]})
        raise exceptions.ValidationError(form.errors)
    return knowledge_documents.document_add_text(
        kb=kb, title=form.validated_data["title"], text=form.validated_data["text"]
    )


def _added_response(added: DocumentAdded) -> Response:
    code = status.HTTP_202_ACCEPTED if added.created else status.HTTP_200_OK
    body = DocumentSerializer(added.document).data
    body["duplicate"] = not added.created
    return Response(body, status=code)


def _upstream_error(exc: Exception) -> exceptions.APIException:
    error = exceptions.APIException(str(exc), code="url_fetch_failed")
    error.status_code = status.HTTP_502_BAD_GATEWAY
    return error


class _DocumentMixin:
    tenant: Tenant

    def _document(self, kb_id: Any, doc_id: Any) -> Document:
        kb = _access_kb(self.tenant, kb_id)
        return access_tenant_object(Document, self.tenant, doc_id, queryset=document_list(kb=kb))


class DocumentDetailView(_DocumentMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = DocumentSerializer

    def get(self, request: Request, kb_id: Any, doc_id: Any) -> Response:
        return Response(DocumentSerializer(self._document(kb_id, doc_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, kb_id: Any, doc_id: Any) -> Response:
        knowledge_documents.document_delete(document=self._document(kb_id, doc_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReindexView(_DocumentMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = DocumentSerializer

    @extend_schema(request=None, responses={202: DocumentSerializer})
    def post(self, request: Request, kb_id: Any, doc_id: Any) -> Response:
        document = knowledge_documents.document_reindex(document=self._document(kb_id, doc_id))
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)


class SearchView(TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = SearchSerializer

    def get_permissions(self) -> Any:
        # A search is a read even though it is a POST.
        from erp.tenancy.permissions import HasTenant

        return [HasTenant()]

    @extend_schema(
        request=SearchSerializer,
        responses=inline_serializer("SearchResults", {"results": SearchHitSerializer(many=True)}),
        summary="Búsqueda híbrida (vectorial + texto completo), mejores primero",
    )
    def post(self, request: Request, kb_id: Any) -> Response:
        kb = _access_kb(self.tenant, kb_id)
        form = SearchSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        hits = knowledge_search(
            tenant=self.tenant,
            knowledge_base_ids=[kb.pk],
            query=form.validated_data["query"],
            k=form.validated_data["k"],
            min_score=form.validated_data.get("min_score"),
        )
        return Response({"results": SearchHitSerializer(hits, many=True).data})
