from django.db import migrations

from erp.tenancy.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):
    dependencies = [("erp_testapp", "0001_initial"), ("erp", "0002_row_level_security")]

    operations = [EnableRowLevelSecurity("erp_testapp_secretholder")]
