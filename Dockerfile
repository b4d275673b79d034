# The image for the web and worker services of docker-compose.yml.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NORTHWIND_VAR_DIR=/app/var
WORKDIR /app
COPY pyproject.toml README.md ./
COPY northwind ./northwind
COPY knowledge ./knowledge
COPY schedules ./schedules
COPY claims ./claims
COPY templates ./templates
COPY manage.py ./
RUN pip install --no-cache-dir . && python manage.py collectstatic --noinput --verbosity 0
RUN useradd --system --home /app northwind && mkdir -p /app/var && chown -R northwind /app/var
USER northwind
EXPOSE 8000
# Threaded workers, so that streamed turns (SSE) do not block a worker: northwind/gunicorn_conf.py.
CMD ["gunicorn", "northwind.wsgi:application", "--config", "python:northwind.gunicorn_conf"]
