from django.apps import AppConfig


class UploadsConfig(AppConfig):
    name = "uploads"
    verbose_name = "Uploads"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from jobs import registry

        from . import jobkind

        registry.register(jobkind.kind())
