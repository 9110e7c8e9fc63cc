# Hearth. `make run` starts a server on ./data; `make test` runs every test.
SHELL := bash
.DELETE_ON_ERROR:
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

TMP := $(CURDIR)/.tmp
BIN := $(TMP)/bin
export PATH := $(BIN):$(PATH)
DATA ?= $(CURDIR)/data
LISTEN ?= 127.0.0.1:8765
FUZZ_TIME ?= 30s
BENCH_TIME ?= 1s
BENCH_COUNT ?= 1

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION := v2.33.0
MCP_SDK_VERSION := 1.32.2
NODE_SDK := $(TMP)/node/node_modules/@modelcontextprotocol/sdk/package.json
# Headless Chromium for the page test (Debian's chromium package).
CHROMIUM ?= $(or $(shell command -v chromium 2>/dev/null),/usr/bin/chromium)
# A stamp under .tmp stands for "chromium is installed": make never treats
# the system binary itself as a target (.DELETE_ON_ERROR could remove it).
CHROMIUM_STAMP := $(TMP)/chromium.stamp
INGRESS ?= 127.0.0.1:8099
# The real agent CLIs for `make e2e`, pinned. npm installs each with its
# native Linux binary (an optional dependency); the e2e test calls that
# binary directly, so the wrappers' postinstall steps do not matter.
CLAUDE_CODE_VERSION := 2.1.328
CODEX_VERSION := 0.169.0
CLAUDE_CLI := $(TMP)/clients/claude-code-$(CLAUDE_CODE_VERSION)/node_modules/@anthropic-ai/claude-code-linux-x64/claude
CODEX_CLI := $(TMP)/clients/codex-$(CODEX_VERSION)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

.PHONY: help
help: ## Describe useful make targets
	@grep -E '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*?## "}; {printf "%-16s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the hearth binary into .tmp/bin
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/hearth ./cmd/hearth

.PHONY: run
run: build ## Build and start hearth on $(LISTEN) with data under $(DATA)
	$(BIN)/hearth serve --data $(DATA) --listen $(LISTEN) --ingress-listen $(INGRESS)

.PHONY: test
test: $(NODE_SDK) $(CHROMIUM_STAMP) ## Run every test (race detector on)
	HEARTH_MCP_SDK=$(TMP)/node HEARTH_CHROMIUM=$(CHROMIUM) go test -race -timeout 15m ./...

.PHONY: e2e
e2e: $(CLAUDE_CLI) $(CODEX_CLI) ## Prove the hooks and MCP registration with the real Claude Code and Codex CLIs (offline)
	HEARTH_CLAUDE_CLI=$(CLAUDE_CLI) HEARTH_CODEX_CLI=$(CODEX_CLI) go test -tags e2e -race -timeout 15m -run '^TestE2E' -count 1 -v ./cmd/hearth/

.PHONY: clients
clients: $(CLAUDE_CLI) $(CODEX_CLI) ## Install the pinned Claude Code and Codex CLIs into .tmp/clients

.PHONY: shorttest
shorttest: ## Run the tests without the Node MCP client
	go test -race -short ./...

.PHONY: bench
bench: ## Run the benchmarks (HEARTH_BENCH_RECORDS=100000 for the large set)
	go test -run '^$$' -bench . -benchmem -benchtime $(BENCH_TIME) -count $(BENCH_COUNT) ./...

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZ_TIME each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZ_TIME) $$pkg; \
	  done; \
	done

.PHONY: generate
generate: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway ## Regenerate gen/ from proto/
	buf generate

.PHONY: checkgenerate
checkgenerate: generate ## Fail when gen/ differs from what proto/ generates
	@git diff --exit-code -- gen/ || (echo "gen/ is stale: run make generate"; exit 1)
	@test -z "$$(git status --porcelain -- gen/)" || (git status --porcelain -- gen/; echo "gen/ has untracked files"; exit 1)

.PHONY: lint
lint: $(BIN)/buf ## gofmt, go vet, buf lint and buf format
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'); echo "gofmt needed"; exit 1)
	go vet ./...
	buf lint
	buf format -d --exit-code

.PHONY: tools
tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway $(NODE_SDK) ## Install pinned tools into .tmp

$(BIN)/buf:
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(BIN)/protoc-gen-grpc-gateway:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)

# The official MCP TypeScript SDK, for the end-to-end test with a real client.
$(NODE_SDK):
	@command -v npm >/dev/null || (echo "npm is needed for the MCP client test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/node
	cd $(TMP)/node && npm install --no-audit --no-fund --silent @modelcontextprotocol/sdk@$(MCP_SDK_VERSION)

# The pinned agent CLIs, each in its own folder so versions never mix.
$(CLAUDE_CLI):
	@command -v npm >/dev/null || (echo "npm is needed for the client e2e test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/clients/claude-code-$(CLAUDE_CODE_VERSION)
	cd $(TMP)/clients/claude-code-$(CLAUDE_CODE_VERSION) && npm install --no-audit --no-fund --silent --ignore-scripts \
	  @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @anthropic-ai/claude-code-linux-x64@$(CLAUDE_CODE_VERSION)
	test -x $@

$(CODEX_CLI):
	@command -v npm >/dev/null || (echo "npm is needed for the client e2e test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/clients/codex-$(CODEX_VERSION)
	cd $(TMP)/clients/codex-$(CODEX_VERSION) && npm install --no-audit --no-fund --silent --ignore-scripts @openai/codex@$(CODEX_VERSION)
	test -x $@

# Installed only when missing, and only where apt-get exists (Debian, CI).
$(CHROMIUM_STAMP):
	@mkdir -p $(TMP)
	@if ! test -x $(CHROMIUM); then \
	  command -v apt-get >/dev/null || { echo "chromium is needed for the page test: install it, or set CHROMIUM=/path/to/chromium"; exit 1; }; \
	  $$(test "$$(id -u)" = 0 || echo sudo) apt-get update; \
	  $$(test "$$(id -u)" = 0 || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi
	@test -x $(CHROMIUM) && touch $@

.PHONY: clean
clean: ## Remove build output and tools
	rm -rf $(TMP)
