# Vestibule — the two commands a newcomer needs are `make dev` and `make test`.
SHELL := /bin/bash
# The Go toolchain every build, test, bench and deploy uses, whatever Go the machine has: the go
# command fetches it from the module proxy once (about 10 s) and caches it. A machine that runs with
# GOTOOLCHAIN=local ignores go.mod's toolchain line, so it is set here; it is the patch release
# that fixes the standard library's vulnerabilities govulncheck reports as called (make vulncheck
# fails on them by default). GO_TOOLCHAIN=local make … uses the machine's own.
GO_TOOLCHAIN ?= go1.26.10
export GOTOOLCHAIN := $(GO_TOOLCHAIN)
export PATH := $(CURDIR)/.tools/bin:$(CURDIR)/.tools/node_modules/.bin:$(CURDIR)/.tools/esbuild/node_modules/.bin:$(CURDIR)/.tools/cfn-lint/bin:$(shell go env GOPATH)/bin:$(PATH)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

# Every Lambda function; each has functions/<name>/main.go and becomes dist/<name>/bootstrap
# (gatekeys: the edge gate's key sync, deployed only when the stack protects an origin;
# keysync: copies the secrets into the keys object the functions read at cold start;
# forwarder: puts the events the others log on the EventBridge bus, outside the VPC;
# notify: sends the notices of visitors' turns, outside the VPC).
FUNCTIONS := enqueue poll admit consume status admin booking gatekeys keysync forwarder notify
# Pinned tool versions.
CDK_CLI_VERSION := 2.1148.1
ESBUILD_VERSION := 0.28.2
CFN_LINT_VERSION := 1.51.0
# axe-core, the accessibility checker the page and console tests inject (testkit.AxeCoreVersion)
AXE_CORE_VERSION := 4.14.1
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
OAUTH2_PROXY_VERSION := v7.15.6
# golangci-lint, the Go checks make test runs after go vet (.golangci.yml: errcheck, staticcheck,
# gocognit, context first; from the module proxy, pinned)
GOLANGCI_LINT := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# govulncheck and the Go vulnerability database it reads, both pinned and both from the module
# proxy: the database is golang.org/x/vulndb's folder of OSV reports (data/osv) in the module
# cache, which govulncheck indexes in memory when a file:// database has no index/ (a second of
# work, where building the index with x/vulndb's cmd/indexdb compiled its whole tree, two CPU
# minutes on a new machine). So make test needs no other network, and a fresh clone on the same
# machine reuses it. Bump VULNDB_VERSION (go list -m golang.org/x/vulndb@latest) to learn of
# newer vulnerabilities.
GOVULNCHECK := golang.org/x/vuln/cmd/govulncheck@v1.9.0
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
# A vulnerability of the standard library fails make test too (GO_TOOLCHAIN fixes those, not
# go.mod's requirements); VULNCHECK_STDLIB=warn lists them as warnings instead.
VULNCHECK_STDLIB ?= fail

.PHONY: dev test test-short lint vulncheck build build-host page page-build synth deploy bench chaos fuzz deps deps-apt deps-redis deps-chromium deps-cdk deps-esbuild deps-rie deps-cfn-lint deps-axe deps-nginx deps-oauth2-proxy clean

## dev: run the whole product locally on http://localhost:8080 (embedded Redis unless REDIS_URL is set)
## (it rebuilds the page's bundles first where `make deps-esbuild` installed esbuild, so an edited module shows)
dev:
	@if [ -x .tools/esbuild/node_modules/.bin/esbuild ]; then \
	  $(MAKE) --no-print-directory page-build || echo "make dev: serving the committed page bundles" >&2; fi
	go run ./cmd/vestibule-dev

## test: install what the tests need, then run two lanes side by side. One lane runs the packages
## that mostly wait on another process (Chromium, the Lambda emulator, nginx, redis-server stopped
## and restarted: TEST_WAIT_PKGS) under the race detector one at a time, internal/e2e last, then
## the CDK app (infra/: without the race detector, its constructs run in the CDK's node process;
## TestCfnLint runs cfn-lint on every synthesized variant and fails on any error; TestCDKSynth
## synthesizes make build's dist/). The other lane, at a lower CPU priority so the waiting tests
## keep their pace, runs golangci-lint (make lint; its govet is go vet's analyzers), govulncheck
## (make vulncheck), make build, then every other package under the race detector. Each test
## runs once. The downloads (apt, npm, the module proxy) run side by side, the Go tools are built
## while they run, and each part of a lane waits only for the tools its own tests run. -k: a
## failure in one lane still lets the other finish, so one run shows every failure.
TEST_JOBS ?= 8
test:
	@$(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target test-wait-lane test-cpu-lane

# The packages of make test's waiting lane: their tests spend most of their time waiting on
# Chromium, the Lambda emulator, nginx, a local stack's ticks or a stopped redis-server.
# internal/e2e runs last: it alone runs oauth2-proxy, whose build is the longest of the tools.
TEST_WAIT_PKGS := ./cmd/vestibule ./functions ./internal/localstack ./cmd/vestibule-dev ./internal/chaos ./internal/e2e
# The lane that competes for the CPU runs at this niceness.
TEST_NICE := nice -n 10
TEST_DEPS := deps-apt deps-cdk deps-esbuild deps-rie deps-cfn-lint deps-axe deps-oauth2-proxy

.PHONY: test-wait-lane test-cpu-lane test-wait-compile test-wait test-e2e test-infra test-lint test-vulncheck test-build test-rest
test-wait-lane: test-infra
test-cpu-lane: test-rest

# The waiting lane's test binaries compiled with every core while the downloads run (go test -p 1
# would compile one package at a time), then thrown away: go test finds the packages in Go's cache.
test-wait-compile:
	@bin=$$(mktemp -d) && { go test -race -c -o $$bin/ $(TEST_WAIT_PKGS) && go test -c -o $$bin/ ./infra/...; \
	  rc=$$?; rm -rf $$bin; exit $$rc; }

test-wait: test-wait-compile deps-apt deps-axe deps-rie
	go test -race -p 1 $(GO_TEST_FLAGS) $(filter-out ./internal/e2e,$(TEST_WAIT_PKGS))

test-e2e: test-wait deps-oauth2-proxy
	go test -race $(GO_TEST_FLAGS) ./internal/e2e

# After make build: TestCDKSynth synthesizes dist/ when every bootstrap is there, placeholders
# when not, so it must not find make build half done.
test-infra: test-e2e test-build deps-cdk deps-cfn-lint
	go test -p 1 $(GO_TEST_FLAGS) ./infra/...

test-lint:
	$(TEST_NICE) $(MAKE) --no-print-directory lint

test-vulncheck: test-lint
	$(TEST_NICE) $(MAKE) --no-print-directory vulncheck

test-build: test-vulncheck
	$(TEST_NICE) $(MAKE) --no-print-directory build

# The other packages' tools: redis-server and nginx (deps-apt), esbuild (static's bundle test),
# axe-core (testkit).
test-rest: test-build deps-apt deps-esbuild deps-axe
	$(TEST_NICE) go test -race $(GO_TEST_FLAGS) $$(go list ./... | grep -v /infra/ | grep -v -x -F $(foreach p,$(TEST_WAIT_PKGS),-e github.com/vestibule-dev/vestibule/$(patsubst ./%,%,$(p))))

## lint: golangci-lint (pinned) with the repository's .golangci.yml: errcheck, staticcheck,
## gocognit ≤ 30 outside tests, the bench and the simulator, a context.Context first
lint:
	go run $(GOLANGCI_LINT) run ./...

## test-short: the fast tier between edits, under 2 minutes: go vet, then the unit and Redis
## tests; what builds a stack in the CDK's node process, Chromium, the Lambda emulator, the chaos
## suite and the bench's own sales skip under -short
test-short: deps-redis deps-nginx
	go vet ./...
	go test -short $(GO_TEST_FLAGS) ./...

## vulncheck: govulncheck (pinned) over the code, against the vulnerability database of
## golang.org/x/vulndb at VULNDB_VERSION, from the module proxy; it fails on a vulnerability the
## code calls in a required module (cmd/vulngate)
vulncheck:
	@dir=$$(go mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  [ -d "$$dir/data/osv" ] || { echo "make vulncheck: no vulnerability database in golang.org/x/vulndb@$(VULNDB_VERSION)" >&2; exit 1; }; \
	  set -o pipefail; echo "go run $(GOVULNCHECK) -db file://$$dir/data/osv -format json ./... | go run ./cmd/vulngate -stdlib=$(VULNCHECK_STDLIB)"; \
	  go run $(GOVULNCHECK) -db file://$$dir/data/osv -format json ./... | go run ./cmd/vulngate -stdlib=$(VULNCHECK_STDLIB)

## build: dist/<function>/bootstrap for linux/arm64, as deployed
build:
	@for f in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## build-host: dist-host/<function>/bootstrap for this machine (what `make bench` runs under the
## Lambda emulator for its cold starts; the emulator tests build their own)
build-host:
	@for f in $(FUNCTIONS); do \
	  CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o dist-host/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## page: bundle the waiting page's modules (static/js/main.js and what it imports) into
## static/waiting.js, the join challenge's worker into static/challenge-worker.js, and the
## notices' module (loaded in rooms that offer notices) into static/notice.js, all minified;
## the bundles are committed (static's TestPageBundle fails when they are stale)
page: deps-esbuild
	@$(MAKE) --no-print-directory page-build

# page-build: the bundles into PAGE_OUT (static's test builds them into a temporary folder).
PAGE_OUT ?= static
PAGE_ESBUILD_FLAGS := --bundle --minify --format=esm --charset=utf8 --legal-comments=none --log-level=warning
page-build:
	@[ "$$(esbuild --version 2>/dev/null)" = "$(ESBUILD_VERSION)" ] || { echo "esbuild $(ESBUILD_VERSION) is needed: make deps-esbuild" >&2; exit 1; }
	esbuild static/js/main.js $(PAGE_ESBUILD_FLAGS) --outfile=$(PAGE_OUT)/waiting.js
	esbuild static/js/challenge-worker.js $(PAGE_ESBUILD_FLAGS) --outfile=$(PAGE_OUT)/challenge-worker.js
	esbuild static/js/notice.js $(PAGE_ESBUILD_FLAGS) --outfile=$(PAGE_OUT)/notice.js

## synth: build, then synthesize the CloudFormation template offline (CDK_ARGS='-c cache=nodes' etc.)
CDK_ARGS ?=
synth: build deps-cdk
	cdk synth --quiet --no-notices $(CDK_ARGS)

## deploy: build, synthesize, lint the template with cfn-lint (any error stops the deploy:
## what CloudFormation would refuse half-way, such as a function environment over 4 KB), run
## `vestibule preflight` on it (the account's Lambda concurrency and API throttle, the cdk-nag
## rules it accepts; a failed check stops the deploy), then deploy exactly that cloud assembly
## to the AWS account of the current credentials
DEPLOY_OUT := cdk.out.deploy
deploy: build deps-cdk deps-cfn-lint
	rm -rf $(DEPLOY_OUT)
	cdk synth --quiet --no-notices -o $(DEPLOY_OUT) $(CDK_ARGS)
	@region=$${AWS_REGION:-$${AWS_DEFAULT_REGION:-$$(aws configure get region 2>/dev/null || echo us-east-1)}}; \
	  cfn-lint --format parseable --regions $$region --ignore-checks W3005 -- $(DEPLOY_OUT)/*.template.json; rc=$$?; \
	  if [ $$(( rc & ~12 )) -ne 0 ]; then echo "make deploy: cfn-lint found errors (exit $$rc): not deploying" >&2; exit 1; fi; \
	  go run ./cmd/vestibule preflight --region $$region --template $$(ls $(DEPLOY_OUT)/*.template.json) || \
	  { echo "make deploy: preflight failed: not deploying" >&2; exit 1; }
	cdk deploy --app $(DEPLOY_OUT) $(CDK_ARGS)

## bench: measure against the goals and print one table (BENCH_JSON=file also writes JSON);
## BENCH_MILLION=1: the 1,000,000-visitor on-sale instead; BENCH_TEN_MILLION=1: the 10,000,000-visitor
## on-sale instead (hours on a 2-core machine; docs/BENCHMARKS.md, "The 10,000,000-visitor on-sale")
bench: deps build build-host
	BENCH_MILLION=$(BENCH_MILLION) BENCH_TEN_MILLION=$(BENCH_TEN_MILLION) go run ./cmd/vestibule-bench

## chaos: the fault-injection suite in its long form
chaos: deps
	CHAOS=long go test -count=1 -timeout 60m -run Chaos -v ./...

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	@for p in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$p | grep '^Fuzz'); do \
	    echo "== $$p $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	  done; \
	done

# deps installs everything the tests need, side by side: the downloads wait on the network, and the
# Go tools compile meanwhile.
deps:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target $(TEST_DEPS)

# Debian's packages the tests run (redis-server, Chromium and fonts-nanum for the pages' Korean,
# nginx with auth_request), those missing installed in one apt-get: one download, one dpkg run.
deps-apt:
	@missing=; command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	  command -v chromium >/dev/null || missing="$$missing chromium fonts-nanum"; \
	  [ -x "$$(command -v nginx || echo /usr/sbin/nginx)" ] || missing="$$missing nginx"; \
	  [ -z "$$missing" ] || { $(MAKE) --no-print-directory $(APT_UPDATED) && \
	    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }
	@$(MAKE) --no-print-directory deps-redis deps-chromium deps-nginx

APT_UPDATED := .tools/.apt-updated
$(APT_UPDATED):
	@mkdir -p .tools
	apt-get update -qq
	@touch $@

deps-redis:
	@command -v redis-server >/dev/null || { $(MAKE) $(APT_UPDATED) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@redis-server --version

# Debian's nginx, with its auth_request module: the forward-auth door's tests run it
# (internal/nginxtest) with the snippet make dev prints, on loopback ports of their own
# (RUNLEVEL=1: the package's own service is not started).
deps-nginx:
	@n=$$(command -v nginx || echo /usr/sbin/nginx); [ -x "$$n" ] || { $(MAKE) $(APT_UPDATED) && \
	  RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; }; \
	  $$n -V 2>&1 | grep -q -- --with-http_auth_request_module || { echo "$$n has no auth_request module" >&2; exit 1; }; \
	  $$n -v

deps-chromium:
	@command -v chromium >/dev/null || { $(MAKE) $(APT_UPDATED) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-nanum >/dev/null; }
	@chromium --version 2>/dev/null || true

deps-cdk:
	@[ -x .tools/node_modules/.bin/cdk ] && [ "$$(cdk --version 2>/dev/null | cut -d' ' -f1)" = "$(CDK_CLI_VERSION)" ] || \
	  npm install --prefix .tools --no-save --no-audit --no-fund --loglevel=error aws-cdk@$(CDK_CLI_VERSION)
	@cdk --version

# esbuild (make page) under its own prefix: an `npm install --no-save` into .tools would
# remove the CDK CLI that an earlier one put there, and the other way round.
deps-esbuild:
	@[ -x .tools/esbuild/node_modules/.bin/esbuild ] && [ "$$(esbuild --version 2>/dev/null)" = "$(ESBUILD_VERSION)" ] || \
	  npm install --prefix .tools/esbuild --no-save --no-audit --no-fund --loglevel=error esbuild@$(ESBUILD_VERSION)
	@echo "esbuild $$(esbuild --version)"

# cfn-lint in its own virtualenv under .tools/, unless one is already on PATH.
deps-cfn-lint:
	@command -v cfn-lint >/dev/null || { python3 -m venv .tools/cfn-lint && \
	  .tools/cfn-lint/bin/pip install --quiet --disable-pip-version-check cfn-lint==$(CFN_LINT_VERSION); }
	@cfn-lint --version

# axe-core under its own prefix (as esbuild), where testkit.AxeCore finds it.
deps-axe:
	@[ -f .tools/axe/node_modules/axe-core/axe.min.js ] && \
	  [ "$$(node -p 'require("./.tools/axe/node_modules/axe-core/package.json").version' 2>/dev/null)" = "$(AXE_CORE_VERSION)" ] || \
	  npm install --prefix .tools/axe --no-save --no-audit --no-fund --loglevel=error axe-core@$(AXE_CORE_VERSION)
	@echo "axe-core $(AXE_CORE_VERSION)"

# The Go programs the tests run, each built from its module at the pinned version into the user's
# cache (beside Go's) once per version, and linked into .tools/bin, where the tests find them: a
# fresh clone on the same machine builds none of them again. They build at a lower CPU priority:
# in make test, the waiting lane's tests run meanwhile.
TOOLS_CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vestibule/bin
# go-tool NAME MODULE@VERSION [environment]: .tools/bin/NAME, a link to TOOLS_CACHE/NAME@VERSION.
go-tool = mkdir -p .tools/bin $(TOOLS_CACHE) && bin=$(TOOLS_CACHE)/$(1)@$(lastword $(subst @, ,$(2))) && \
	  { [ -x "$$bin" ] || { tmp=$$(mktemp -d $(TOOLS_CACHE)/build.XXXXXX) && \
	    { $(3) GOBIN=$$tmp nice -n 10 go install $(2) && mv $$tmp/$(1) "$$bin"; rc=$$?; rm -rf $$tmp; [ $$rc = 0 ]; }; }; } && \
	  ln -sfn "$$bin" .tools/bin/$(1)

# oauth2-proxy (the OIDC door's third-party relying party in internal/e2e).
deps-oauth2-proxy:
	@go version -m .tools/bin/oauth2-proxy 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]]*github.com/oauth2-proxy/oauth2-proxy/v7[[:space:]]*$(OAUTH2_PROXY_VERSION)[[:space:]]" || { \
	  $(call go-tool,oauth2-proxy,github.com/oauth2-proxy/oauth2-proxy/v7@$(OAUTH2_PROXY_VERSION),GOFLAGS=-mod=mod); }
	@echo "oauth2-proxy $(OAUTH2_PROXY_VERSION)"

deps-rie:
	@command -v aws-lambda-rie >/dev/null || { $(call go-tool,aws-lambda-rie,github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)); }
	@command -v aws-lambda-rie

clean:
	rm -rf dist dist-host cdk.out cdk.out.deploy
