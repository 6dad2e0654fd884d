# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates its own virtual environment (.venv) and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Headless Chromium renders `seam chunk --html` pages in the CLI tests (Debian's package,
# with a CJK font so Japanese and Chinese are not boxes; installed when missing and we
# are root, as on a fresh CI machine).
CHROMIUM := /usr/bin/chromium
# The session store tests start a real Redis server (Debian's; Valkey is not packaged
# for Debian 12): installed when missing and we are root.
REDIS_SERVER := /usr/bin/redis-server

.PHONY: demo test test-beside test-fast test-interpreted test-vllm test-vllm-cpu sanitize lint typecheck docs bench clean

$(STAMP): pyproject.toml setup.py sdk/chunking/_native.c sdk/chunking/_kernels.c sdk/chunking/_scan.h sdk/chunking/_prose.h sdk/chunking/_guard.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,docs,llama,serve,cli,redis,otel]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict sdk

# The documentation site, built strict: a broken link, reference or docstring fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# make test runs in two phases. First, two at a time (make -j2, each one's output kept
# apart where make can: GNU make 4), what no wall clock bounds: the chunking suite and
# fuzzing under the sanitizers (in their own copy of the tree), beside ruff, mypy, the
# docs, the chunking suite interpreted, the tests that need no llama-server and the built
# wheel and sdist. Then, alone on the machine, the tests against a real llama-server,
# whose latency bounds are wall-clock. The chunking suite runs on the compiled parts
# under the sanitizers and without them interpreted: not a third time.
SYNC := $(if $(filter output-sync,$(.FEATURES)),--output-sync=target)

test: $(STAMP) $(CHROMIUM) $(REDIS_SERVER)
	$(MAKE) -j2 $(SYNC) sanitize test-beside
	$(VENV)/bin/pytest -q -m llama

test-beside: lint typecheck docs
	SEAM_INTERPRETED=1 $(VENV)/bin/pytest -q -p no:cacheprovider tests/chunking
	$(VENV)/bin/pytest -q -p no:cacheprovider -m "not llama" --ignore=tests/chunking
	$(PY) tests/package/check.py  # the built wheel and sdist in bare virtual environments

# Everything but the tests that need a real llama-server: minutes, for a quick check
# while working (make test is what CI runs).
test-fast: lint typecheck $(CHROMIUM) $(REDIS_SERVER)
	$(VENV)/bin/pytest -q -m "not llama"

# The chunking suite again with no compiled part (as an install without a C compiler
# runs): the same chunks must come out.
test-interpreted: $(STAMP)
	SEAM_INTERPRETED=1 $(VENV)/bin/pytest -q -p no:cacheprovider tests/chunking

# The compiled parts built with AddressSanitizer and UBSan (in a copy of the tree), the
# chunking suite and SEAM_FUZZ_SECONDS (default 120) of fuzzing against them.
# The vLLM tests (tests/engines/test_vllm.py) on a machine with a GPU: starts vLLM with
# priority scheduling, runs them, stops it (vLLM does not run on this project's CI).
test-vllm:
	scripts/gpu-check.sh

# The same tests against vLLM's CPU build on this machine (the test model, dequantized;
# about 5 minutes the first time): scripts/vllm-cpu-check.sh.
test-vllm-cpu: $(STAMP)
	scripts/vllm-cpu-check.sh

sanitize: $(STAMP)
	tests/sanitize.sh

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fonts-noto-cjk >/dev/null; \
	else \
		echo "chromium is missing (apt-get install chromium as root); the HTML rendering tests will be skipped"; \
	fi

$(REDIS_SERVER):
	@if [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null; \
	else \
		echo "redis-server is missing (apt-get install redis-server as root); the session store tests will fail"; \
	fi

bench: $(STAMP)
	$(PY) bench/chunking.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
