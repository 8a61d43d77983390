# Ferry's everyday commands. `make test` is what CI runs.
GO ?= go

.PHONY: build test fuzz bench run

build:
	$(GO) build -o ferry ./cmd/ferry

run: build
	./ferry serve

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

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
