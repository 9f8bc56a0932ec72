# notarium-search: two tiers from one Dockerfile (docs/operations.md#docker).
#   lexical (the default; no model):
#     docker build -t notarium-search .
#   semantic, from a model pack folder under models/ (git ignores what you put there):
#     docker build --build-arg SEMANTIC=1 --build-arg MODEL_PACK=models/multilingual-e5-small-int8 -t notarium-search:semantic .
#   semantic, the default model fetched from the Hugging Face hub at build time:
#     docker build --build-arg SEMANTIC=1 -t notarium-search:semantic .
#   (another preset: --build-arg MODEL_PRESET=all-minilm-l6-v2; `notarium-search models list` shows them;
#   another repository: make a pack with the download command's REPO form, docs/models.md, then MODEL_PACK)
# Run:
#   docker run --restart unless-stopped -p 127.0.0.1:8377:8377 -v /path/to/vault:/notes:ro -v notarium-index:/data notarium-search
# Each sub-folder of /notes is a space; indexes live in the /data volume. Other host
# names: NOTARIUM_ALLOWED_HOSTS. The whole image is checked by `bash .ci/docker-smoke`.

# A Debian release, not a moving major tag (3.11-slim follows Debian's newest): the
# system libraries stay bookworm's. Pin a digest for byte-identical rebuilds.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# strip, for the install step below; only in this stage.
# hadolint ignore=DL3008
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils >/dev/null \
    && rm -rf /var/lib/apt/lists/*
ARG SEMANTIC=
WORKDIR /src
# constraints.txt: the exact version of every dependency, direct and transitive, of
# both tiers (docs/operations.md says how it is regenerated), so that two builds a
# month apart install the same packages.
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY notarium_search ./notarium_search
# Some wheels ship their extension modules with symbol tables: numkong's (under
# usearch) is 45.5 MB, 4.0 MB stripped; tantivy's 17.5 MB, 12.2 MB. The libraries
# auditwheel vendored into *.libs/ are left alone (strip can break their patched headers).
RUN case "$SEMANTIC" in ""|1) ;; *) echo "SEMANTIC=$SEMANTIC: give 1 for the semantic tier, nothing for the lexical one" >&2; exit 1;; esac \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --quiet --constraint /src/constraints.txt "/src${SEMANTIC:+[semantic]}" \
    && find /opt/venv -name '*.so' ! -path '*.libs/*' -exec strip --strip-unneeded {} +
# Declared after the install, so that another model reuses the installed layer.
ARG MODEL_PACK=
# The hub route's model: a named preset (semantic/presets.py, docs/models.md), which
# pins the repository's commit, its int8 graph and that graph's SHA-256, and says its
# pooling and prefixes, so that two builds get the same model or the second fails.
ARG MODEL_PRESET=multilingual-e5-small
# Installed by pip as dependencies but never run by the service (the container
# smoke test exercises search, embedding, MCP and /schema without them): pip
# and setuptools themselves; faker and polyfactory, test-data generators that
# Litestar imports only to invent OpenAPI examples, which we do not ask for
# (30 MB); the hub client tokenizers imports only for from_pretrained, with its
# download accelerator (hf-xet, fsspec, filelock: 22 MB): the image reads its
# model from /opt/models and never downloads at run time. Nor onnx's own test
# models (17 MB): the service reads only its protobuf module (semantic/word_table.py).
ARG NOT_RUN="pip setuptools wheel faker polyfactory huggingface-hub hf-xet fsspec filelock"
# The model, checked here so that a wrong pack fails the build, not the first start,
# and checked as the service's user (10001), who must be able to read it. Only the
# models/ folder is mounted: podman's bind mounts ignore .dockerignore.
# hadolint ignore=SC2086
RUN --mount=type=bind,source=models,target=/packs \
    set -e; mkdir -p /opt/models; \
    if [ -z "$SEMANTIC" ]; then \
        if [ -n "$MODEL_PACK" ]; then echo "MODEL_PACK needs --build-arg SEMANTIC=1 (the lexical tier has no model)" >&2; exit 1; fi; \
    elif [ -n "$MODEL_PACK" ]; then \
        pack="${MODEL_PACK%/}"; \
        case "$pack" in \
            models/*/*|*..*|models/|"") pack=;; \
            models/*) pack="${pack#models/}";; \
            *) pack=;; \
        esac; \
        if [ -z "$pack" ]; then echo "MODEL_PACK=$MODEL_PACK: name a folder of models/, e.g. models/multilingual-e5-small-int8" >&2; exit 1; fi; \
        if [ ! -d "/packs/$pack" ]; then \
            echo "MODEL_PACK=$MODEL_PACK is not a folder of the build context (put the pack in models/, beside the Dockerfile)" >&2; exit 1; \
        fi; \
        cp -R "/packs/$pack" /opt/models/default; \
    else \
        /opt/venv/bin/notarium-search models download "$MODEL_PRESET" /opt/models/default; \
    fi; \
    chmod -R a+rX /opt/models; \
    if [ -n "$SEMANTIC" ]; then \
        setpriv --reuid=10001 --regid=10001 --clear-groups /opt/venv/bin/notarium-search models check /opt/models/default; \
    fi; \
    /opt/venv/bin/python -m pip uninstall --yes --quiet $NOT_RUN; \
    rm -rf /opt/venv/lib/python*/site-packages/onnx/backend/test

FROM ${PYTHON_IMAGE}
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
# The base's own pip, setuptools and wheel are never run either. A fixed uid and
# gid (10001:10001) so that a host folder on /data can be given to them (chown).
RUN if python3 -m pip --version >/dev/null 2>&1; then python3 -m pip uninstall --yes --quiet pip setuptools wheel; fi \
    && groupadd --gid 10001 notarium \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /data --shell /usr/sbin/nologin notarium \
    && mkdir -p /notes /data/index \
    && chown -R 10001:10001 /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/models /opt/models
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8377
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:' + os.environ['NOTARIUM_PORT'] + '/healthz', timeout=2)"]
ENTRYPOINT ["notarium-search"]
CMD ["serve"]
