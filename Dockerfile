# notarium-search. Two tiers from one Dockerfile:
#   lexical (default, small, no model):
#     docker build -t notarium-search .
#   semantic (onnxruntime + an embedding model fetched from the hub at build time):
#     docker build --build-arg SEMANTIC=1 -t notarium-search:semantic .
#     docker build --build-arg SEMANTIC=1 --build-arg MODEL_REPO=Xenova/all-MiniLM-L6-v2 -t notarium-search:en .
# Run:    docker run --restart unless-stopped -p 127.0.0.1:8377:8377 -v /path/to/vault:/notes:ro -v notarium-index:/data notarium-search
#         (the restart policy covers a worker that keeps dying; other host names: NOTARIUM_ALLOWED_HOSTS)
# Each sub-folder of the mounted /notes is a space; indexes live in the /data volume.

FROM python:3.11-slim AS build
ARG SEMANTIC=
ARG MODEL_REPO=Xenova/multilingual-e5-small
WORKDIR /src
COPY pyproject.toml README.md ./
COPY notarium_search ./notarium_search
RUN python -m venv /opt/venv \
    && mkdir -p /opt/models \
    && if [ -n "$SEMANTIC" ]; then \
        /opt/venv/bin/pip install --no-cache-dir "/src[semantic]" \
        && /opt/venv/bin/notarium-search models download "$MODEL_REPO" /opt/models/default; \
    else \
        /opt/venv/bin/pip install --no-cache-dir /src; \
    fi

FROM python:3.11-slim
ARG SEMANTIC=
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NOTARIUM_HOST=0.0.0.0 \
    NOTARIUM_PORT=8377 \
    NOTARIUM_SPACES_ROOT=/notes \
    NOTARIUM_INDEX_DIR=/data/index \
    NOTARIUM_MODEL_DIR=/opt/models/default \
    VECTOR_SEARCH=${SEMANTIC:+1}
RUN useradd --system --uid 10001 --create-home --home-dir /data notarium \
    && mkdir -p /notes /data/index \
    && chown -R notarium /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/models /opt/models
USER 10001
VOLUME ["/data"]
EXPOSE 8377
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['NOTARIUM_PORT'] + '/healthz', timeout=2)"]
ENTRYPOINT ["notarium-search"]
CMD ["serve"]
