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
# proxy: the database is built from golang.org/x/vulndb's OSV reports (its cmd/indexdb) into
# the user's cache (beside Go's), once per version, so make test needs no other network and a
# fresh clone on the same machine reuses it. Bump VULNDB_VERSION
# (go list -m golang.org/x/vulndb@latest) to learn of newer vulnerabilities.
GOVULNCHECK := golang.org/x/vuln/cmd/govulncheck@v1.9.0
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vestibule/vulndb/$(VULNDB_VERSION)
# A vulnerability of the standard library fails make test too (GO_TOOLCHAIN fixes those, not
# go.mod's requirements); VULNCHECK_STDLIB=warn lists them as warnings instead.
VULNCHECK_STDLIB ?= fail

.PHONY: dev test test-short lint vulncheck build build-host page page-build synth deploy bench chaos fuzz deps deps-redis deps-chromium deps-cdk deps-esbuild deps-rie deps-cfn-lint deps-axe deps-nginx deps-oauth2-proxy clean

## dev: run the whole product locally on http://localhost:8080 (embedded Redis unless REDIS_URL is set)
## (it rebuilds the page's bundles first where `make deps-esbuild` installed esbuild, so an edited module shows)
dev:
	@if [ -x .tools/esbuild/node_modules/.bin/esbuild ]; then \
	  $(MAKE) --no-print-directory page-build || echo "make dev: serving the committed page bundles" >&2; fi
	go run ./cmd/vestibule-dev

## test: install what the tests need, check the Go code with go vet, golangci-lint (make lint) and
## govulncheck, then run every test once: all but the CDK app under the race detector, then the
## CDK app (infra/stack's TestCfnLint runs cfn-lint on every synthesized variant and fails on any
## error; the CDK app runs without the race detector: its constructs run in the CDK's node process)
test: deps build vulncheck
	go vet ./...
	$(MAKE) --no-print-directory lint
	go test -race $(GO_TEST_FLAGS) $$(go list ./... | grep -v /infra/)
	go test $(GO_TEST_FLAGS) ./infra/...

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
## golang.org/x/vulndb at VULNDB_VERSION, built offline from the module proxy; it fails on a
## vulnerability the code calls in a required module (internal/vulngate)
vulncheck:
	@[ -f $(VULNDB)/index/db.json ] || { \
	  dir=$$(go mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  [ -d "$$dir/data/osv" ] && rm -rf $(VULNDB).tmp && mkdir -p $(dir $(VULNDB)) && \
	  go run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns "$$dir/data/osv" -out $(VULNDB).tmp && \
	  mv $(VULNDB).tmp $(VULNDB); } || { echo "make vulncheck: could not build the vulnerability database" >&2; exit 1; }
	set -o pipefail; go run $(GOVULNCHECK) -db file://$(VULNDB) -format json ./... | \
	  go run ./internal/vulngate -stdlib=$(VULNCHECK_STDLIB)

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

deps: deps-redis deps-chromium deps-cdk deps-esbuild deps-rie deps-cfn-lint deps-axe deps-nginx deps-oauth2-proxy

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

# oauth2-proxy (the OIDC door's third-party relying party in internal/e2e), built from its module
# at the pinned version into .tools/bin, where the test finds it.
deps-oauth2-proxy:
	@go version -m .tools/bin/oauth2-proxy 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]]*github.com/oauth2-proxy/oauth2-proxy/v7[[:space:]]*$(OAUTH2_PROXY_VERSION)[[:space:]]" || GOBIN=$(CURDIR)/.tools/bin GOFLAGS=-mod=mod go install github.com/oauth2-proxy/oauth2-proxy/v7@$(OAUTH2_PROXY_VERSION)
	@echo "oauth2-proxy $(OAUTH2_PROXY_VERSION)"

deps-rie:
	@command -v aws-lambda-rie >/dev/null || GOBIN=$(CURDIR)/.tools/bin go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
	@command -v aws-lambda-rie

clean:
	rm -rf dist dist-host cdk.out cdk.out.deploy
