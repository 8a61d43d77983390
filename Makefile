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

# Each fuzz target for a short while (longer runs: FUZZTIME=10m make fuzz).
FUZZTIME ?= 30s
FUZZ_PROTOCOL = FuzzJSONDecode FuzzJSONPlanDecode FuzzJSONPlanEncode FuzzQueryDecode FuzzCBORDecode FuzzHandler FuzzXMLRoundTrip
FUZZ_SNS = FuzzParseFilterPolicy FuzzMatch FuzzParseJSON FuzzNotificationJSON
FUZZ_CLOUDWATCH = FuzzPutMetricAlarm FuzzSetAlarmState
fuzz:
	@for f in $(FUZZ_PROTOCOL); do $(GO) test ./internal/protocol -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) || exit 1; done
	@for f in $(FUZZ_SNS); do $(GO) test ./internal/sns -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) || exit 1; done
	@for f in $(FUZZ_CLOUDWATCH); do $(GO) test ./internal/cloudwatch -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) || exit 1; done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
