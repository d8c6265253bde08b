# Production image: one image for every process of docker-compose.yml (web, workers, beat,
# migrate). Configuration comes only from the environment (see env.example); ERP_DATA_DIR and
# the embedded services of `make run` are not used here.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --create-home --home-dir /home/app \
       --shell /usr/sbin/nologin app

WORKDIR /app

# Dependencies first (cached while pyproject.toml is unchanged): install the project from
# pyproject with empty package stubs, then the real sources replace the stubs.
COPY pyproject.toml ./
RUN touch README.md \
    && mkdir -p erp ai_agents correo \
    && touch erp/__init__.py ai_agents/__init__.py correo/__init__.py \
    && pip install -e .

COPY . .
# Static files are collected at build time (hashed, compressed) and served by WhiteNoise.
ENV STATIC_MANIFEST=1 \
    STATIC_ROOT=/app/staticfiles
RUN pip install --no-deps -e . \
    && DATABASE_URL=postgresql://build@127.0.0.1:1/build \
       REDIS_URL=redis://127.0.0.1:1/0 \
       SECRET_KEY=collectstatic-only \
       python manage.py collectstatic --noinput -v 0

# Kept WhatsApp media (WHATSAPP_MEDIA_ROOT): a volume in compose, owned by the app user.
RUN mkdir -p /app/media && chown app:app /app/media
USER app
EXPOSE 8000

# The web process (docker-compose.yml runs the workers, beat and migrate from this image too).
# Django is served over ASGI by uvicorn so that SSE replies stream. --no-proxy-headers: the
# client's address behind proxies is read by the app as TRUSTED_PROXY_HOPS says.
CMD ["sh", "-c", "exec uvicorn erp.asgi:application --host 0.0.0.0 --port \"${PORT:-8000}\" --workers \"${WEB_CONCURRENCY:-2}\" --no-proxy-headers --lifespan off"]
