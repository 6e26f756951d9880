# dageval developer tasks. Everything runs offline; only Go is required.
GO ?= go
PKGS := ./...

.PHONY: test vet demo bench fmt snapshots build

## test: vet and the race-enabled test suite (what CI runs)
test: vet
	$(GO) test -race -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

## demo: run the quickstart eval suite offline (replayed cassettes) and print its table
demo:
	$(GO) run ./cmd/dageval run evals/examples/quickstart/suite.yaml --out dageval-out

## bench: the benchmarks that back the speed and memory goals
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## fmt: format the code
fmt:
	gofmt -w $$(git ls-files '*.go')

## snapshots: rewrite go-snaps snapshots after an intended change (review the diff!)
snapshots:
	UPDATE_SNAPS=true $(GO) test -count=1 $(PKGS)

build:
	$(GO) build -o bin/dageval ./cmd/dageval
