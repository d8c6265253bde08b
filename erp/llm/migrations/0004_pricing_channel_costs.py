"""Channel costs in the usage ledger, the WhatsApp price table, budget notices.

SEED VALUES: the ChannelPrice rows below are EXAMPLE figures, rounded, for the countries
the product starts with and a "*" row for the rest, valid from 2026-10-01 (when WhatsApp
began billing free-form messages inside the 24-hour window as "service"). They are NOT
Meta's rate card: the owner must check every figure against Meta's current published rates
(business.whatsapp.com/products/platform-pricing) and correct them in the admin
("Precios de mensajes del canal") before relying on any cost shown.
"""

import datetime
from decimal import Decimal
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from erp.tenancy.rls import EnableRowLevelSecurity

VALID_FROM = datetime.date(2026, 10, 1)
# USD per message: (marketing, utility, authentication, service). Examples to confirm.
SEED = {
    "ES": ("0.0615", "0.0200", "0.0200", "0.0100"),
    "MX": ("0.0305", "0.0085", "0.0085", "0.0050"),
    "AR": ("0.0618", "0.0260", "0.0260", "0.0100"),
    "CO": ("0.0125", "0.0010", "0.0010", "0.0010"),
    "CL": ("0.0889", "0.0200", "0.0200", "0.0100"),
    "PE": ("0.0703", "0.0200", "0.0200", "0.0100"),
    "US": ("0.0250", "0.0040", "0.0040", "0.0030"),
    "BR": ("0.0625", "0.0068", "0.0068", "0.0050"),
    "*": ("0.0600", "0.0100", "0.0100", "0.0080"),
}
CATEGORIES = ("marketing", "utility", "authentication", "service")


def seed_prices(apps: Any, schema_editor: Any) -> None:
    price = apps.get_model("llm", "ChannelPrice")
    price.objects.bulk_create(
        [
            price(
                channel="whatsapp",
                country=country,
                category=category,
                price_usd=Decimal(value),
                valid_from=VALID_FROM,
            )
            for country, values in SEED.items()
            for category, value in zip(CATEGORIES, values, strict=True)
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('llm', '0003_usage_conversation_index'),
        ('tenancy', '0002_pricing_budget'),
        ('erp', '0002_row_level_security'),
    ]

    operations = [
        migrations.CreateModel(
            name='BudgetNotice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('month', models.CharField(max_length=7, verbose_name='mes')),
                ('threshold', models.PositiveSmallIntegerField(verbose_name='umbral (%)')),
                ('spent_usd', models.DecimalField(decimal_places=6, max_digits=12, verbose_name='gastado (USD)')),
                ('budget_usd', models.DecimalField(decimal_places=2, max_digits=12, verbose_name='presupuesto (USD)')),
                ('recipients', models.JSONField(blank=True, default=list, verbose_name='destinatarios')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='fecha')),
            ],
            options={
                'verbose_name': 'aviso de presupuesto',
                'verbose_name_plural': 'avisos de presupuesto',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='ChannelPrice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('channel', models.CharField(default='whatsapp', max_length=20, verbose_name='canal')),
                ('country', models.CharField(help_text='Código ISO de dos letras, o * para el resto.', max_length=2, verbose_name='país')),
                ('category', models.CharField(choices=[('marketing', 'marketing'), ('utility', 'utilidad'), ('authentication', 'autenticación'), ('service', 'servicio')], max_length=20, verbose_name='categoría')),
                ('price_usd', models.DecimalField(decimal_places=6, max_digits=10, verbose_name='USD por mensaje')),
                ('valid_from', models.DateField(verbose_name='vigente desde')),
                ('updated_at', models.DateTimeField(auto_now=True, verbose_name='actualizado')),
            ],
            options={
                'verbose_name': 'precio de mensaje del canal',
                'verbose_name_plural': 'precios de mensajes del canal',
                'ordering': ['channel', 'country', 'category', '-valid_from'],
            },
        ),
        migrations.AddField(
            model_name='usagelog',
            name='charge_key',
            field=models.CharField(blank=True, max_length=120, null=True, verbose_name='clave del cargo'),
        ),
        migrations.AlterField(
            model_name='usagelog',
            name='operation',
            field=models.CharField(choices=[('llm_request', 'petición al modelo'), ('embedding', 'embeddings'), ('tool_execution', 'ejecución de herramienta'), ('playground', 'prueba del agente'), ('transcription', 'transcripción de audio'), ('channel_message', 'mensaje del canal')], max_length=50, verbose_name='operación'),
        ),
        migrations.AddConstraint(
            model_name='usagelog',
            constraint=models.UniqueConstraint(condition=models.Q(('charge_key__isnull', False)), fields=('tenant', 'charge_key'), name='usage_charge_once'),
        ),
        migrations.AddField(
            model_name='budgetnotice',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenancy.tenant', verbose_name='empresa'),
        ),
        migrations.AddConstraint(
            model_name='channelprice',
            constraint=models.UniqueConstraint(fields=('channel', 'country', 'category', 'valid_from'), name='channelprice_unique'),
        ),
        migrations.AddConstraint(
            model_name='budgetnotice',
            constraint=models.UniqueConstraint(fields=('tenant', 'month', 'threshold'), name='budgetnotice_once'),
        ),
        EnableRowLevelSecurity("llm_budgetnotice"),
        migrations.RunPython(seed_prices, migrations.RunPython.noop),
    ]
