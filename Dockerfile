# Kafka Controller Lab: the web app, and the image the statistics job is submitted from
# (docker-compose.yml). Build from the repository root: docker build -t kclab .
#
# python:3.11-slim is Debian 12 "bookworm": its openjdk-17-jre-headless is the Java 17 that
# pyspark 4.x needs (Spark 4 dropped Java 8 and 11), and its nodejs/npm run `npm ci` for the
# front-end libraries (d3, the socket.io client), which the app serves from its own origin.
FROM python:3.11-slim

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless nodejs npm procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Python packages first (the slow layer; re-used while only static files change).
COPY pyproject.toml README.md ./
COPY backend ./backend
COPY web ./web
RUN pip install --no-cache-dir .

# Front-end libraries pinned by package-lock.json.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error

COPY static ./static
COPY lessons ./lessons
COPY docs ./docs

# uid/gid 185 is the `spark` user of the apache/spark images: the app, the stats job's driver
# and the Spark executors all write the shared /data volume (replay logs, statistics), so they
# must be the same user. /data exists in the image so a fresh named volume takes its owner.
RUN groupadd --system --gid 185 kclab \
 && useradd --system --uid 185 --gid kclab --home-dir /app --no-create-home kclab \
 && mkdir -p /data/replays /data/stats \
 && chown -R kclab:kclab /data /app
USER kclab

# The source tree comes first on sys.path, so the app finds static/ and node_modules/ here
# (`pip install .` put the dependencies and the `kclab` command in place).
ENV PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    KCLAB_DATA_DIR=/data

EXPOSE 5000
CMD ["kclab", "serve", "--host", "0.0.0.0", "--zk", "zk1:2181,zk2:2181,zk3:2181"]
