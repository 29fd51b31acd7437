# Multi-stage build: wheels are built in the first stage, the runtime image only installs them
# and runs as an unprivileged user. The same package as `pip install .` (tests/test_packaging.py).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-cache-dir --upgrade pip build \
 && pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim AS runtime
# The image has no git checkout: releases record `<version>+<VEIL_COMMIT>`, given at build time
# (`docker build --build-arg VEIL_COMMIT=$(git rev-parse --short HEAD) .`; compose passes the
# variable of the same name), else the bare version.
ARG VEIL_COMMIT=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VEIL_HOST=0.0.0.0 VEIL_PORT=8000 VEIL_COMMIT=${VEIL_COMMIT}
RUN useradd --create-home --uid 10001 veil
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER veil
WORKDIR /home/veil
EXPOSE 8000
# liveness (/healthz), not /readyz: the API serves while the workers are stopped for an upgrade
# on the address the API listens on: loopback when it listens on every interface
HEALTHCHECK --interval=10s --timeout=3s CMD python -c "import os,urllib.request as u; h=os.environ.get('VEIL_HOST', '').strip('[]'); h='127.0.0.1' if h in ('', '0.0.0.0', '::') else h; u.build_opener(u.ProxyHandler({})).open('http://%s:%s/healthz' % ('[%s]' % h if ':' in h else h, os.environ.get('VEIL_PORT', '8000')))"
# The image alone (`docker run -p 8000:8000 <image>`) runs what `make run` does: the API, its
# worker processes and, without DATABASE_URL, an embedded PostgreSQL (data in the container).
# Compose runs the API with `--workers 0` and the workers as their own service (`veil worker`,
# `--scale worker=N`). With `--workers 0` as the image's default a lone container accepted
# jobs that nothing would ever run, and /readyz never became ready.
CMD ["veil", "serve"]
