from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"

    def ready(self):
        from jobs import registry

        from . import jobkind

        registry.register(jobkind.kind())
