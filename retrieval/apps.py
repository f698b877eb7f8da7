from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self):
        from jobs import registry

        from . import checks  # noqa: F401  (registers system checks)
        from . import jobkind

        registry.register(jobkind.kind())
