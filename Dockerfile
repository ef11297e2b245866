# syntax=docker/dockerfile:1
# Kafka Controller Lab's image: the web app, and in docker-compose.yml also the Spark master, the
# Spark worker and the statistics job's driver. The pyspark package carries a whole Spark
# distribution (bin/spark-class, jars/), so the cluster runs the driver's Spark version by
# construction. Debian's redis-server is the workers' message queue (web/scaleout): a child of
# `kclab serve` when the image runs alone, docker-compose.yml's `redis` service otherwise. Alone,
# it serves on an embedded ZooKeeper, one worker process per core:
#
#   docker build -t kclab:0.1.0 . && docker run --rm -p 127.0.0.1:5000:5000 kclab:0.1.0
#
# The base image is named by tag and digest (scripts/pin-images.sh updates the digest). Its tag
# names the Debian release because the Java package depends on it: Debian 13 "trixie" has
# openjdk-21-jre-headless (and 25) but no 17; Debian 12 "bookworm" had 17 only. Spark 4 runs on
# Java 17 and 21; tests/deploy checks that JAVA_PACKAGE exists in the release the tag names.
ARG PYTHON_IMAGE=python:3.11.16-slim-trixie@sha256:be1575ed968de893bd54f4c56315ff7c4736ce522c1bca08fd521731aafc0d76
ARG JAVA_PACKAGE=openjdk-21-jre-headless

# --- the page's JavaScript libraries (d3, the socket.io client), pinned by package-lock.json ----
FROM ${PYTHON_IMAGE} AS web-libs
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error

# --- the app ------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ARG JAVA_PACKAGE
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${JAVA_PACKAGE}" procps redis-server \
 && rm -rf /var/lib/apt/lists/*

# Python packages before any code: every file checked against requirements.lock's hashes, in a
# layer (pyspark is most of it) that is rebuilt only when the lock changes, not at every edit.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
COPY requirements.lock /tmp/requirements.lock
RUN python -m venv "$VIRTUAL_ENV" \
 && pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock \
 && printf '#!/bin/sh\nexec python -m web.cli "$@"\n' >/usr/local/bin/kclab \
 && chmod 755 /usr/local/bin/kclab

# The runtime user, uid/gid 185. It writes /data (a volume: replay logs, statistics, saved
# lessons) and /tmp (Spark's scratch space) and nothing else: the code below belongs to root.
# /data exists in the image so that a fresh named volume takes its owner.
RUN groupadd --system --gid 185 kclab \
 && useradd --system --uid 185 --gid kclab --home-dir /data --no-create-home kclab \
 && mkdir -p /data/replays /data/stats \
 && chown -R kclab:kclab /data

WORKDIR /app
COPY --from=web-libs /build/node_modules ./node_modules
COPY pyproject.toml README.md ./
COPY docs ./docs
COPY lessons ./lessons
COPY static ./static
COPY backend ./backend
COPY web ./web
# Byte-code compiled now, as root: the runtime user could not write __pycache__ here.
RUN python -m compileall -q backend web

USER kclab
ENV PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    KCLAB_DATA_DIR=/data

EXPOSE 5000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=5 \
  CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:5000/healthz', timeout=3)"]
CMD ["kclab", "serve", "--host", "0.0.0.0", "--port", "5000"]
