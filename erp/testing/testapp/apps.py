from django.apps import AppConfig


class TestAppConfig(AppConfig):
    name = "erp.testing.testapp"
    label = "erp_testapp"
    default_auto_field = "django.db.models.BigAutoField"
