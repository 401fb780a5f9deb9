# axlr's build and test entry points. The first build compiles the Temporal
# server (about 10 minutes on 2 cores); later builds are cached.

GO ?= go
# REDOCLY is the Redocly CLI that lints the OpenAPI document, pinned (it
# runs on the machine's Node.js 20).
REDOCLY ?= 2.77.0

# Packages whose tests start the embedded Temporal server run without -race
# (a race build of the server takes longer than the tests), one package at
# a time (-p 1): their servers choose ports from the same range.
SERVER_PKGS := ./internal/e2e/ ./internal/daemon/ ./internal/embedtemporal/ ./cmd/axlrd/
RACE_PKGS = $(shell $(GO) list ./... | grep -v -e /internal/e2e -e /internal/daemon -e /internal/embedtemporal -e /cmd/axlrd)

.PHONY: all build run test vet workflowcheck bench bench-cluster cluster

all: build

## build: axlrd, axlr-tui and axlr into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## run: axlrd on the embedded Temporal server
run:
	$(GO) run ./cmd/axlrd

## vet: go vet, gofmt, workflowcheck, docker-compose.yml's syntax and the service API's OpenAPI document (Redocly CLI from npm)
vet: workflowcheck
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt would change the files above"; exit 1; }
	POSTGRES_PASSWORD=check docker-compose config -q
	npx --yes @redocly/cli@$(REDOCLY) lint --config redocly.yaml internal/service/openapi.json

## workflowcheck: the SDK's static determinism check of the workflows
workflowcheck:
	$(GO) tool workflowcheck -config workflowcheck.config.yaml ./workflows/...

## test: vet, the race-checked unit tests, then the embedded-server tests
test: vet
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -p 1 -count=1 -timeout 20m $(SERVER_PKGS)

## bench: orchestration benchmarks on the embedded server, the sandbox's cost, memory, the session record and the service API
bench:
	$(GO) test -run '^$$' -bench 'Benchmark(Noop|ModelRequest|ReadToolCall|HistoryBytes|CeremonyStep)' -benchtime 200x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkRestartToRetry' -benchtime 5x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkThousandSessions' -benchtime 1x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkExecTrue' -benchtime 300x ./cmd/axlrd/
	$(GO) test -run '^$$' -bench 'Benchmark(Wake|Write)$$' -benchtime 300x ./kmp/embedded/
	$(GO) test -run '^$$' -bench 'BenchmarkTurnRecord' -benchtime 200x ./activities/
	$(GO) test -run '^$$' -bench 'BenchmarkDeltaLatency' -benchtime 200x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkEventStreams' -benchtime 20x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkTurnOverhead' -benchtime 50x ./internal/e2e/

## cluster: PostgreSQL, Temporal on it and three axlrd on this machine, without Docker (state in .cluster/)
cluster:
	$(GO) run ./internal/cluster/clusterd

## bench-cluster: axlrd hosts on the Temporal server built from the pinned module, on PostgreSQL from Debian's packages
bench-cluster:
	$(GO) test -run '^$$' -bench 'BenchmarkClusterAdmission' -benchtime 20x ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkClusterJobs' -benchtime 12x -timeout 20m ./internal/e2e/
	$(GO) test -run '^$$' -bench 'BenchmarkClusterHostLoss' -benchtime 3x -timeout 20m ./internal/e2e/
