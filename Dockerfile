# notarium-search, lexical tier: no embedding model, small image.
# Build:  docker build -t notarium-search .
# Run:    docker run -p 8377:8377 -v /path/to/vault:/notes:ro -v notarium-index:/data notarium-search
# Each sub-folder of the mounted /notes is a space; indexes live in the /data volume.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY notarium_search ./notarium_search
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir /src

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NOTARIUM_HOST=0.0.0.0 \
    NOTARIUM_PORT=8377 \
    NOTARIUM_SPACES_ROOT=/notes \
    NOTARIUM_INDEX_DIR=/data/index
RUN useradd --system --uid 10001 --create-home --home-dir /data notarium \
    && mkdir -p /notes /data/index \
    && chown -R notarium /data
COPY --from=build /opt/venv /opt/venv
USER 10001
VOLUME ["/data"]
EXPOSE 8377
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['NOTARIUM_PORT'] + '/healthz', timeout=2)"]
ENTRYPOINT ["notarium-search"]
CMD ["serve"]
