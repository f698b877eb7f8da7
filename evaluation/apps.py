from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from jobs import registry

        from . import jobkind

        registry.register(jobkind.kind())
