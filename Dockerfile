# Multi-stage build: the first stage installs the package (`pip install .`, tests/test_packaging.py)
# into a virtual environment, the runtime copies that one folder and runs as an unprivileged user.
# (Copying wheels in and deleting them in the next step kept them in a layer: 284 MB of 1.71 GB.)
# .dockerignore lets only what is copied below into the build context.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY migrations ./migrations
RUN python -m venv /opt/veil \
 && /opt/veil/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/veil/bin/pip install --no-cache-dir .

FROM python:3.11-slim AS runtime
# The image has no git checkout: releases record `<version>+<VEIL_COMMIT>`, given at build time
# (`docker build --build-arg VEIL_COMMIT=$(git rev-parse --short HEAD) .`; compose passes the
# variable of the same name), else the bare version.
ARG VEIL_COMMIT=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VEIL_HOST=0.0.0.0 VEIL_PORT=8000 VEIL_COMMIT=${VEIL_COMMIT}
# The data directory (VEIL_DATA_DIR's default .veil under WORKDIR: the embedded PostgreSQL) is
# made here, owned by veil: a volume mounted on it (`-v veil-data:/home/veil/.veil`) takes the
# image's owner; on a path the image lacks it was root's and the server refused to start.
RUN useradd --create-home --uid 10001 veil \
 && install -d -o veil -g veil /home/veil/.veil
COPY --from=build /opt/veil /opt/veil
ENV PATH=/opt/veil/bin:$PATH
USER veil
WORKDIR /home/veil
EXPOSE 8000
# liveness (/healthz), not /readyz: the API serves while the workers are stopped for an upgrade
# on the address the API listens on: loopback when it listens on every interface
HEALTHCHECK --interval=10s --timeout=3s CMD python -c "import os,urllib.request as u; h=os.environ.get('VEIL_HOST', '').strip('[]'); h='127.0.0.1' if h in ('', '0.0.0.0', '::') else h; u.build_opener(u.ProxyHandler({})).open('http://%s:%s/healthz' % ('[%s]' % h if ':' in h else h, os.environ.get('VEIL_PORT', '8000')))"
# The image alone (`docker run --stop-timeout 20 -p 8000:8000 <image>`) runs what `make run` does:
# the API, its worker processes and, without DATABASE_URL, an embedded PostgreSQL (data in
# /home/veil/.veil: `-v veil-data:/home/veil/.veil` keeps it beyond the container). The stop
# timeout: a running job's 8 s grace, then the database's clean stop; docker's 10 s was too short.
# Compose runs the API with `--workers 0` and the workers as their own service (`veil worker`,
# `--scale worker=N`). With `--workers 0` as the image's default a lone container accepted
# jobs that nothing would ever run, and /readyz never became ready.
CMD ["veil", "serve"]
