# dageval developer tasks. Everything runs offline; only Go is required.
GO ?= go
PKGS := ./...

.PHONY: test test-browser vet demo bench fmt snapshots build fuzz

## test: vet and the race-enabled test suite (what CI runs)
test: vet
	$(GO) test -race -count=1 $(PKGS)

## test-browser: open the HTML reports in headless Chromium (installs Debian's chromium when missing); screenshots in browser-out/
test-browser:
	$(GO) vet -tags browser ./reports/
	rm -rf browser-out && mkdir -p browser-out
	chromium="$$(scripts/ensure-chromium.sh)" && DAGEVAL_CHROMIUM="$$chromium" $(GO) test -tags browser -race -count=1 -run Browser ./reports/ -artifacts -outputdir "$(CURDIR)/browser-out"

## fuzz: run each fuzz target for FUZZTIME (10s), one after another (go test fuzzes one target per run);
## a crasher is saved under the package's testdata/fuzz and from then on runs in make test
## FUZZMINIMIZETIME bounds the runs (100x) the fuzzer spends shrinking each input that reaches new code before it counts it
## (go's default, 60s, is a whole short run: the workers minimized and execs stayed at 0/s); a crasher is
## saved unshrunk or part-shrunk, and reproduces all the same
FUZZTIME ?= 10s
FUZZMINIMIZETIME ?= 100x
FUZZ_TARGETS := \
	./evals:FuzzParseSuite \
	./harness/agentfile:FuzzParseAgentFile \
	./rubrics:FuzzParseRubric \
	./harness/profile:FuzzParseConfig \
	./fakes/cassette:FuzzParseCassette \
	./fakes/cassette:FuzzImportVCRPy \
	./harness/middleware:FuzzRenderTranscript
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME); \
	done

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

## build: bin/dageval without debug information or local paths (see README: binary size)
build:
	$(GO) build -trimpath -ldflags='-s -w' -o bin/dageval ./cmd/dageval
