"""Settings for Northwind: one module, every difference from the environment.

With no environment at all the product runs on its embedded default: SQLite
and local files under ``var/``, Celery tasks run eagerly in-process, and a
local-memory cache. The variables below switch each part to a real service;
README.md lists them with their defaults.
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from botocore.config import Config as BotoConfig
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ImproperlyConfigured(
            f"{name} must be a whole number of at least {minimum}, not {raw!r}."
        )
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


VAR_DIR = Path(os.environ.get("NORTHWIND_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    """Take SECRET_KEY from the environment, or keep one under var/.

    The file is only for the embedded default on one machine; any deployment
    sets SECRET_KEY, and ``check --deploy`` tells when it is weak.
    """
    from_env = os.environ.get("SECRET_KEY", "").strip()
    if from_env:
        return from_env
    if env_bool("SECRET_KEY_REQUIRED", False):
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. This deployment (SECRET_KEY_REQUIRED=true, as in "
            "docker-compose.yml) has no default key: set SECRET_KEY to a long random value, "
            "e.g. SECRET_KEY=$(openssl rand -base64 48)."
        )
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "axes",
    "northwind",
    "knowledge",
    "schedules",
    "claims",
    "webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "northwind.middleware.api_no_store",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "northwind.urls"

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

WSGI_APPLICATION = "northwind.wsgi.application"

# --- Database -------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 3
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "northwind.sqlite3"),
            # Wait for a writer instead of failing at once when the demo
            # server and a management command write at the same time. WAL
            # lets readers go on while one writes, and with synchronous=NORMAL
            # a commit is not an fsync (the WAL is synced at checkpoints): a
            # turn's two or three commits cost 2.7 ms each on this disk before
            # (docs/evaluation.md). An application crash loses nothing; a
            # power cut may lose the last commits of this embedded default
            # (production runs on PostgreSQL).
            "OPTIONS": {
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Object storage -------------------------------------------------------
# The "default" storage holds wording sources, clause objects and manifests.
AWS_STORAGE_BUCKET_NAME = os.environ.get("AWS_STORAGE_BUCKET_NAME", "").strip()
AWS_S3_ENDPOINT_URL = os.environ.get("AWS_S3_ENDPOINT_URL", "").strip() or None
AWS_S3_REGION_NAME = os.environ.get("AWS_S3_REGION_NAME", "").strip() or "us-east-1"
STORAGE_BACKEND = "s3" if AWS_STORAGE_BUCKET_NAME else "local"
STORAGE_LOCAL_ROOT = Path(os.environ.get("NORTHWIND_STORAGE_DIR", VAR_DIR / "storage"))

if STORAGE_BACKEND == "s3":
    # Short timeouts and bounded retries: an outage must fail in seconds so
    # the claim agent can say the knowledge base is unavailable.
    _s3_client_config = BotoConfig(
        connect_timeout=float(os.environ.get("AWS_S3_CONNECT_TIMEOUT", "2")),
        read_timeout=float(os.environ.get("AWS_S3_READ_TIMEOUT", "5")),
        retries={
            "max_attempts": int(os.environ.get("AWS_S3_MAX_ATTEMPTS", "2")),
            "mode": "standard",
        },
        signature_version="s3v4",
        s3={"addressing_style": "path"},
    )
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": AWS_S3_ENDPOINT_URL,
            "region_name": AWS_S3_REGION_NAME,
            "access_key": os.environ.get("AWS_ACCESS_KEY_ID") or None,
            "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY") or None,
            "location": os.environ.get("AWS_LOCATION", ""),
            "client_config": _s3_client_config,
            "file_overwrite": True,
            "default_acl": None,
            "querystring_auth": True,
        },
    }
else:
    _default_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": STORAGE_LOCAL_ROOT},
    }

STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
MEDIA_URL = "media/"
MEDIA_ROOT = STORAGE_LOCAL_ROOT

# --- Celery ---------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip()
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "").strip() or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None
)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis hands an unacknowledged message (late ack: the worker died mid-task)
# to another worker after the visibility timeout. It must outlast the longest
# task and any retry countdown, or a slow task runs twice; an hour (Redis's
# default) strands a killed worker's ingestion that long. Ten minutes is many
# times the longest ingestion measured (docs/reliability.md).
CELERY_VISIBILITY_TIMEOUT = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "600"))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 3,
    "socket_timeout": 5,
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # Look for abandoned messages every 30 s (kombu's default is 100 s).
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 3,
}
# Run by `celery -A northwind beat` (or a worker started with -B); without a
# beat process, `manage.py sweep_ingestion` from cron does the same.
CELERY_BEAT_SCHEDULE = {
    "wording-ingestion-sweep": {
        "task": "knowledge.wording_versions_sweep",
        "schedule": float(os.environ.get("WORDING_INGEST_SWEEP_EVERY", "60")),
    },
}
# The sweeper (knowledge.services.ingestion.wording_versions_sweep): a version
# never handed to the broker is dispatched again after REQUEUE_AFTER seconds;
# one ingesting longer than STALLED_AFTER (past the visibility timeout) has
# stalled, and after MAX_STALLS stalls in a row it fails visibly.
WORDING_INGEST_REQUEUE_AFTER = int(os.environ.get("WORDING_INGEST_REQUEUE_AFTER", "120"))
WORDING_INGEST_STALLED_AFTER = int(
    os.environ.get("WORDING_INGEST_STALLED_AFTER", str(CELERY_VISIBILITY_TIMEOUT + 300))
)
WORDING_INGEST_MAX_STALLS = int(os.environ.get("WORDING_INGEST_MAX_STALLS", "3"))
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# --- Cache ----------------------------------------------------------------
CACHE_URL = os.environ.get("CACHE_URL", "").strip()
if CACHE_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Auth, i18n -----------------------------------------------------------
# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords
# from one address, logins from it are refused for LOGIN_COOLOFF_MINUTES.
AUTHENTICATION_BACKENDS = [
    "northwind.auth.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "admin/login_locked.html"
AXES_VERBOSE = False
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-nz"
TIME_ZONE = "Pacific/Auckland"
USE_I18N = True
USE_TZ = True

# Request bodies larger than this are refused before a view reads them.
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# --- REST API -------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: the contract's bodies are JSON, and form or multipart parsers
    # would accept file parts that DATA_UPLOAD_MAX_MEMORY_SIZE does not bound.
    "DEFAULT_PARSER_CLASSES": ["northwind.api_errors.StrictJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": os.environ.get("API_THROTTLE_RATE", "120/minute"),
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "northwind.api_errors.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Northwind claim agent API",
    "DESCRIPTION": (
        "Submit a customer's claim messages and get back a reply draft that cites only the "
        "policy wording clauses it fetched. Authenticate with `Authorization: Token <key>`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI's and Redoc's assets from our own static files (drf-spectacular-sidecar),
    # never from a CDN: /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation lists its 4xx answers and their bodies (northwind/openapi.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "northwind.openapi.error_answers_add",
    ],
}

# History pages show changes; they never revert (northwind/admin_history.py).
SIMPLE_HISTORY_REVERT_DISABLED = True

# --- Claim agent -----------------------------------------------------------
# The offline clause selector the agent uses: hybrid (default), bm25, embedding
# or baseline (the seed's keyword ranker, kept for comparison only).
CLAIM_AGENT_MODEL = os.environ.get("CLAIM_AGENT_MODEL", "hybrid")
CLAIM_AGENT_CLAUSE_STORE = "knowledge.clause_store.StorageClauseStore"
# Only for CLAIM_AGENT_MODEL=claims.agent.llm.OpenAICompatibleModel (docs/agent-turn.md).
CLAIM_AGENT_LLM_BASE_URL = os.environ.get("CLAIM_AGENT_LLM_BASE_URL", "")
CLAIM_AGENT_LLM_API_KEY = os.environ.get("CLAIM_AGENT_LLM_API_KEY", "")
CLAIM_AGENT_LLM_MODEL = os.environ.get("CLAIM_AGENT_LLM_MODEL", "gpt-4o-mini")
CLAIM_AGENT_LLM_TIMEOUT = float(os.environ.get("CLAIM_AGENT_LLM_TIMEOUT", "10"))
CLAIM_AGENT_LLM_RETRIES = int(os.environ.get("CLAIM_AGENT_LLM_RETRIES", "2"))
# The offline selector that chooses when the model is down or answers nonsense.
CLAIM_AGENT_FALLBACK = os.environ.get("CLAIM_AGENT_FALLBACK", "hybrid")
# Where claim status comes from (claims/claims_system.py): the demo table, or an adapter.
CLAIMS_SOURCE = os.environ.get("CLAIMS_SOURCE", "claims.claims_system.DatabaseClaimsSource")
CLAIMS_SOURCE_URL = os.environ.get("CLAIMS_SOURCE_URL", "")
# Streamed turns (Accept: text/event-stream): a comment line this often keeps proxies open.
SSE_HEARTBEAT_SECONDS = float(os.environ.get("SSE_HEARTBEAT_SECONDS", "10"))

# --- Webhooks --------------------------------------------------------------
# A failed delivery is tried again after base, 2 x base, 4 x base ... seconds
# (capped), up to WEBHOOK_MAX_ATTEMPTS attempts in all; docs/webhooks.md.
WEBHOOK_RETRY_BASE_SECONDS = float(os.environ.get("WEBHOOK_RETRY_BASE_SECONDS", "30"))
WEBHOOK_RETRY_MAX_SECONDS = float(os.environ.get("WEBHOOK_RETRY_MAX_SECONDS", "3600"))
WEBHOOK_MAX_ATTEMPTS = int(os.environ.get("WEBHOOK_MAX_ATTEMPTS", "6"))
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "5"))

# The release evaluation gate replays this many of a line's most recent customer
# questions (masked run records), besides its inventory (claims/evaluation/gate.py).
RELEASE_GATE_RECENT_QUESTIONS = env_int("RELEASE_GATE_RECENT_QUESTIONS", 200)

# --- Security (production) -----------------------------------------------
# HTTPS=true is how a deployment behind TLS says so; check --deploy is then clean.
HTTPS = env_bool("HTTPS", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000")) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

if DEBUG and HTTPS:
    raise ImproperlyConfigured(
        "DEBUG=true with HTTPS=true: a deployment reachable over HTTPS must not show debug "
        "pages. Set DEBUG=false (DEBUG=true is for a developer's machine only)."
    )
# Debug pages and error reports hide every setting and request variable that
# may hold a secret, connection URLs with passwords included (northwind/debug.py).
DEFAULT_EXCEPTION_REPORTER_FILTER = "northwind.debug.SecretHidingFilter"

# Content-Security-Policy (django-csp): scripts only from our own static files
# (Swagger UI's init script is a separate file: SpectacularSwaggerSplitView);
# inline styles are allowed for the admin's style attributes and inline SVG.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "botocore": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}
