# Kafka Controller Lab. `make run` and `make test` install whatever is missing first.
# Pass options to the app with ARGS, e.g. make run ARGS="--zk 10.0.0.5:2181"
.PHONY: setup run test

ARGS ?=

setup:
	bash scripts/setup.sh

run: setup
	.venv/bin/kclab serve $(ARGS)

test: setup
	.venv/bin/python -m pytest $(ARGS)
