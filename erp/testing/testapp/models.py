from django.db import models

from erp.crypto import EncryptedTextField
from erp.tenancy.models import TenantOwnedModel


class SecretHolder(TenantOwnedModel):
    """Carries an encrypted field so the crypto and rotation tests have a real table."""

    name = models.CharField(max_length=50)
    secret = EncryptedTextField(blank=True, default="")

    def __str__(self) -> str:
        return self.name
