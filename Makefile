# Kafka Controller Lab. `make run` and `make test` install whatever is missing first.
# Pass options to the app with ARGS, e.g. make run ARGS="--zk 10.0.0.5:2181"
#
#   make run     installs only what running needs (no admin rights needed when Java 17+ is there)
#   make test    installs what the tests need too (Chromium, docker-compose, caddy), then runs them
#   make setup   installs everything `make test` needs, runs nothing
#   make lock    regenerates requirements.lock and requirements-test.lock from pyproject.toml
.PHONY: setup setup-run run test lock

ARGS ?=
TEST_WORKERS ?= 2
UV_VERSION = 0.13.8
LOCK_TOOL = var/lock-tool
LOCK = $(LOCK_TOOL)/bin/uv pip compile pyproject.toml --quiet --generate-hashes --universal \
       --python-version 3.11 --custom-compile-command "make lock"

setup:
	bash scripts/setup.sh test

setup-run:
	bash scripts/setup.sh run

run: setup-run
	.venv/bin/kclab serve $(ARGS)

# Two processes by default: most of the suite waits (ZooKeeper sessions expiring, lessons' timers,
# a browser), so two overlap those waits on two cores; each starts its own ZooKeeper, Spark and
# Chromium. Whole files go to one process (--dist loadfile), so a module's fixtures start once.
# TEST_WORKERS=0 runs everything in this process (e.g. to see a test's prints with ARGS=-s).
test: setup
	.venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(ARGS)

# uv (pinned) resolves for every platform (--universal) and records every file's hash; the test
# set is constrained by the run set, so both lock the same version of every shared package.
lock:
	test -x $(LOCK_TOOL)/bin/uv || { python3 -m venv $(LOCK_TOOL) && $(LOCK_TOOL)/bin/pip install -q uv==$(UV_VERSION); }
	$(LOCK) -o requirements.lock
	$(LOCK) --extra test -c requirements.lock -o requirements-test.lock
