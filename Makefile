# Nexus — build, test and benchmark the plugin host.
# Run `make help` for the targets.

GO        ?= go
BIN       := bin
PLUGINS   := $(wildcard plugins/agents/*/nexus.toml plugins/tools/*/nexus.toml plugins/tasks/*/nexus.toml)
PLUGIN_DIRS := $(patsubst %/nexus.toml,%,$(PLUGINS))
BUF       := $(GO) tool -modfile=$(CURDIR)/tools/go.mod buf

.PHONY: help deps gocache build plugins demo test test-short bench lint generate generate-check fuzz clean

help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## install bubblewrap (the sandbox) when it is missing
	@command -v bwrap >/dev/null 2>&1 || { \
		echo "installing bubblewrap (the sandbox runtime)"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -q && apt-get install -y -q bubblewrap; \
		elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -q && sudo apt-get install -y -q bubblewrap; \
		else echo "bubblewrap is missing: install it (apt-get install bubblewrap)"; exit 1; fi; }

build: ## build nexus-host into bin/
	$(GO) build -o $(BIN)/nexus-host ./cmd/nexus-host

plugins: ## build every bundled plugin into its own directory
	@for d in $(PLUGIN_DIRS); do \
		echo "go build -o $$d/$$(basename $$d) ./$$d"; \
		$(GO) build -o $$d/$$(basename $$d) ./$$d || exit 1; \
	done

demo: deps build plugins ## build everything, list the plugins, call the calculator, run exercises with oracle and show the summary
	$(BIN)/nexus-host list
	$(BIN)/nexus-host call calculator '{"expression": "2 * (3 + 4) - 10 / 4"}'
	$(BIN)/nexus-host call stats '{"values": [3, 1, 4, 1, 5, 9, 2, 6]}'
	@$(MAKE) --no-print-directory gocache
	$(BIN)/nexus-host run --task exercises --agent oracle --task-arg gocache=$(GOCACHE_SEED)

# A warm Go build cache the exercises task copies into each instance's
# fresh cache (caches stay per instance; only their seed is shared). It
# lives outside /tmp, which the sandbox hides, and must be readable there.
GOCACHE_SEED := /var/tmp/nexus-gocache-seed

gocache: ## warm the Go build cache seed used by `make demo`
	@mkdir -p $(GOCACHE_SEED)
	@for d in plugins/tasks/exercises/data/*/; do \
		(cd $$d && GOCACHE=$(GOCACHE_SEED) CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off GOWORK=off \
			$(GO) test -count=1 -run '^$$' ./... >/dev/null 2>&1 || true); \
	done
	@chmod -R a+rX $(GOCACHE_SEED)

test: deps ## run every test with the race detector
	$(GO) test -race -count=1 ./...

test-short: ## run the fast tests only
	$(GO) test -short -count=1 ./...

bench: build ## run the benchmarks and rewrite BENCHMARKS.md
	$(GO) run ./bench -out BENCHMARKS.md

lint: ## vet, staticcheck, gofmt and buf lint
	$(GO) vet ./...
	$(GO) tool -modfile=$(CURDIR)/tools/go.mod staticcheck ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'); echo "gofmt needed"; exit 1)
	cd proto && $(BUF) lint

generate: ## regenerate protobuf code from proto/
	cd proto && $(BUF) generate

generate-check: generate ## fail if generated code differs from what is committed
	@git diff --exit-code -- internal/pb || (echo "generated code is stale: run make generate and commit"; exit 1)
	@test -z "$$(git status --porcelain -- internal/pb)" || (git status --porcelain -- internal/pb; echo "untracked generated files: run make generate and commit"; exit 1)

fuzz: ## fuzz the manifest parser for FUZZTIME (default 1m)
	$(GO) test ./manifest -run '^$$' -fuzz FuzzParseManifest -fuzztime $${FUZZTIME:-1m}

clean: ## remove built binaries
	rm -rf $(BIN)
	@for d in $(PLUGIN_DIRS); do rm -f $$d/$$(basename $$d); done
