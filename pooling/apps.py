from django.apps import AppConfig


class PoolingConfig(AppConfig):
    name = "pooling"
    verbose_name = "Pooling and judging"

    def ready(self):
        from jobs import registry

        from . import jobkind

        registry.register(jobkind.kind())
