from django.apps import AppConfig


def _anserini_version() -> str:
    from retrieval.anserini import anserini_version  # pyserini's jar, looked up when asked

    return anserini_version()


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self):
        from common import manifest
        from jobs import registry

        from . import checks  # noqa: F401  (registers system checks)
        from . import jobkind

        registry.register(jobkind.kind())
        manifest.version_probe_register("anserini", _anserini_version)
