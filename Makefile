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

# Each decoder fuzzed for a short while (longer runs: FUZZTIME=10m make fuzz).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./internal/protocol -run '^$$' -fuzz '^FuzzJSONDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/protocol -run '^$$' -fuzz '^FuzzQueryDecode$$' -fuzztime $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
