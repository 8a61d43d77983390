# Ferry's everyday commands. `make test` is what CI runs.
GO ?= go

.PHONY: build test test-deps fmt-check fuzz bench run

build:
	$(GO) build -o ferry ./cmd/ferry

run: build
	./ferry serve

# With FERRY_TEST_POSTGRES_URL set (CI sets it), the server's integration
# tests run a second time with every server on PostgreSQL.
test: fmt-check test-deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	@if [ -n "$$FERRY_TEST_POSTGRES_URL" ]; then \
		echo "FERRY_TEST_SERVER_STORE=postgres $(GO) test -race -count=1 -timeout 20m ./internal/server"; \
		FERRY_TEST_SERVER_STORE=postgres $(GO) test -race -count=1 -timeout 20m ./internal/server; \
	fi

# The npm project that pins the AWS SDK for JavaScript v3, sqs-consumer and
# sqs-producer of the tests that drive Ferry from Node.js. Where
# npm is installed, make test installs it from its lock file (npm ci) when
# node_modules is missing or older than package.json or the lock file;
# without npm those tests skip and say so.
JSSDK := internal/server/testdata/jssdk
NPM ?= npm
test-deps:
	@if command -v $(NPM) >/dev/null 2>&1; then \
		$(MAKE) -s --no-print-directory $(JSSDK)/node_modules/.package-lock.json; \
	else \
		echo "test-deps: no npm, so the JavaScript SDK test will skip"; \
	fi

# npm 7 and later write node_modules/.package-lock.json; touch marks the
# install done with an npm that does not.
$(JSSDK)/node_modules/.package-lock.json: $(JSSDK)/package.json $(JSSDK)/package-lock.json
	$(NPM) ci --prefix $(JSSDK)
	@touch $@

# gofmt over every Go file git knows of, committed or new (a deleted one is
# skipped), so that a clean clone and a working tree are checked alike.
GOFMT ?= gofmt
fmt-check:
	@files=$$(git ls-files --cached --others --exclude-standard '*.go' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done); \
	[ -n "$$files" ] || { echo "fmt-check: git lists no Go files"; exit 1; }; \
	bad=$$($(GOFMT) -l $$files) || exit 1; \
	if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi

# Every fuzz target of every package, each for a short while (longer runs:
# FUZZTIME=10m make fuzz). Targets are found, not listed, so none is missed.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "$$pkg $$f"; \
			$(GO) test $$pkg -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) || exit 1; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
