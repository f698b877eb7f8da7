import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import every view module (and what it imports) while the worker boots, not inside its
# first request: a fresh gunicorn worker otherwise spends about a second of CPU on imports
# in the middle of serving a request.
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns
