import os

from django.core.wsgi import get_wsgi_application


def _warm_up() -> None:
    """Import every view module (and what it imports) and compile the busiest templates
    while the worker boots, not inside its first requests: a fresh gunicorn worker
    otherwise spends about a second of CPU on imports in the middle of serving one."""
    from django.template.loader import get_template
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns
    reverse("crowd:study_entry", kwargs={"slug": "warm-up"})  # builds the reverse lookup
    for name in ("crowd/entry.html", "crowd/consent.html", "crowd/item.html", "crowd/done.html"):
        get_template(name)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
_warm_up()
