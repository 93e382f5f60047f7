# igwlab: every target is one line; see README.md.
GO ?= go
export GOFLAGS ?= -buildvcs=false
# No package of ours uses cgo, and without it the first build compiles no C (runtime/cgo and
# net's resolver): a cold build of bin/igwlab took 85 s against 95 s with it on 2 cores.
export CGO_ENABLED ?= 0

.PHONY: all build image bench bench-sim run test test-e2e test-times fuzz test-prometheus test-browser test-pulumi test-pulumi-render test-pulumi-automation test-apiserver test-apiserver-binary test-apiserver-stack test-apiserver-hooks test-apiserver-charts test-istio test-h2spec vet fmt tools kube-tools clean

all: build

build: ## bin/igwlab (the local lab), bin/igwlab-lab (the real lab's commands and targets) and bin/h2dial (the dialing client)
	$(GO) build -o bin/igwlab ./runner/cmd/igwlab
	$(GO) build -o bin/igwlab-lab ./runner/cmd/igwlab-lab
	$(GO) build -o bin/h2dial ./h2dial/cmd/h2dial

# The lab's own image for a cluster of yours (igwlab:h2dialImage): built by BuildKit for every
# architecture the cluster's nodes run (Go cross-compiles on this machine's own: no emulation)
# and pushed. igwlab doctor checks the pushed image against the nodes.
PLATFORMS ?= linux/amd64,linux/arm64
image: ## the lab's image for your cluster: make image IMAGE=registry.example.com/igwlab/h2dial:v1 [PLATFORMS=linux/amd64,linux/arm64]
	@test -n "$(IMAGE)" || (echo "make image: set IMAGE=REGISTRY/igwlab/h2dial:TAG (a tag other than latest; then pulumi config set igwlab:h2dialImage with it)"; exit 2)
	docker buildx build --platform $(PLATFORMS) -t $(IMAGE) -f h2dial/Dockerfile --push .

run: ## the whole suite on the local emulated pool; builds bin/igwlab only (no Pulumi or Kubernetes SDK)
	$(GO) build -o bin/igwlab ./runner/cmd/igwlab
	./bin/igwlab suite --target local

# make test: every package's tests with -short, side by side (the tests that measure rates ask
# testing.Short() and are make test-e2e's), but the conformance tier's: runner/conformance runs
# whole in make test-h2spec, which builds h2spec and names it (its table's test needs it).
# The real lab's packages, whose tests link the Pulumi, Kubernetes or Helm SDK and are most of a
# cold build, are vetted and tested only where a file they are built from changed since the
# branch's upstream (hack/testplan says which, and why); LAB=all tests them anyway, as CI does.
# hack/gotest.sh is go test over test binaries kept between runs in $(TESTBIN): go test links
# every binary anew (97 s of make test's time on 2 cores, warm build cache), and go test -c
# leaves a binary whose package and flags did not change as it is.
LAB ?= auto
TESTPLAN = $(GO) run ./hack/testplan
TESTBIN ?= $(or $(IGWLAB_TESTBIN),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/igwlab/testbin)
GOTEST = GO="$(GO)" IGWLAB_TESTBIN="$(TESTBIN)" bash hack/gotest.sh
test: vet ## vet, then every package's tests with -short (the local lab's; the real lab's where changed, or with LAB=all)
	pkgs="$$($(TESTPLAN) packages -q -lab $(LAB) -except runner/conformance)" && $(GOTEST) -p "$$(nproc)" $(GOTESTFLAGS) -short -timeout 15m $$pkgs

# make test-e2e: exactly the tests that ask testing.Short() (hack/testplan finds them in the
# source), in full. They measure rates and times in wall time, so one package runs at a time
# (two of them side by side starved diagnose's load of the 80% a worker must reach), and the
# conformance tier last. hack/gotest.sh runs them from make test's binaries (or links any it
# lacks first, side by side: go test -p 1 links each after the package before it has run).
test-e2e: ## the end-to-end suites, the calibration tier and the conformance tier: every test make test's -short skips (CI runs both)
	args="$$($(TESTPLAN) e2e -except runner/conformance)" && $(GOTEST) $(GOTESTFLAGS) -timeout 15m $$args
	$(MAKE) --no-print-directory test-h2spec

# The build the pool's cost is compared with: a git ref (tag bench-base where it was made; in a
# clone without it, HEAD: what the working tree changes).
BENCH_BASE ?= bench-base

# The simulated target's speed: a 40-pod x 4-worker pool at 150,000 requests a second over
# 2,000 connections for 60 s of virtual time, and the default suite; each prints simulated
# seconds per wall second (and the pool's heap).
bench-sim: ## the simulated target's speed: simulated seconds per wall second at production size and for the default suite
	$(GO) test -run '^$$' -bench 'ProductionPool|DefaultSuite' -benchtime 1x ./runner/sim ./runner/gateway/simulated

bench: build bench-sim ## side-by-side benchmarks: clients vs fortio and h2load, harness capacity, suite and flip time, the pool's cost vs BENCH_BASE, Go micro-benchmarks
	bash hack/apt-need.sh h2load:nghttp2-client
	bash hack/bench-base.sh $(BENCH_BASE) bin/igwlab-base
	$(GO) build -o bin/bench ./bench/cmd/bench
	IGWLAB_PULUMI_BIN="$$(bash hack/pulumi-tools.sh)" ./bin/bench -docs docs/performance.md
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./runner/stats ./runner/analysis ./runner/emulator ./h2dial \
		| tee bench/results/micro-$$(date -u +%Y%m%dT%H%M%SZ).txt

# GOTESTFLAGS=-json makes every go test of make test print its events, which hack/testtimes reads.
test-times: ## make test then make test-e2e, timed: rewrites docs/testing.md's table of where the time goes (phases, packages, slowest tests); LAB as for make test
	LAB=$(LAB) bash hack/test-times.sh "$(TIMES_NOTE)"

# Budgets are execution counts, not durations: a duration's deadline races the fuzzing
# coordinator's own stop (go.dev/issue/75804) and fails a clean run with "context deadline
# exceeded" on a loaded machine. 40000 runs of each target take about 15 s here; each new input's
# minimization is capped the same way (the default, 60 s, would eat a brief run).
FUZZRUNS ?= 40000x
fuzz: ## fuzz the catalog loader and the Envoy stats parser for FUZZRUNS inputs each (CI runs it briefly)
	$(GO) test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZRUNS) -fuzzminimizetime 500x ./stacks
	$(GO) test -run '^$$' -fuzz '^FuzzParseSnapshot$$' -fuzztime $(FUZZRUNS) -fuzzminimizetime 500x ./runner/stats

test-prometheus: ## every dashboard query through a real Prometheus scraping the local pool (apt-get install prometheus)
	$(GO) test -count=1 -v -run 'TestDashboardAgainstRealPrometheus|TestPromQL' ./dashboard/

test-browser: ## report.html opened in headless Chromium (apt-get install chromium)
	$(GO) test -count=1 -v -run 'TestReportRendersInChromium' ./runner/report/

tools: ## the Pulumi CLI, Go language host and Kubernetes provider, built once into ~/.cache/igwlab/tools
	bash hack/pulumi-tools.sh

test-pulumi: test-pulumi-render test-pulumi-automation ## the program through the real Pulumi CLI and Automation API in render mode (builds the tools on first use)

# The render half measures no rate and may share the machine; the Automation API half drives
# load through the local target after each stack flip (the knob must rotate connections within a
# 1 s window), so it runs alone.
test-pulumi-render:
	IGWLAB_PULUMI_BIN="$$(bash hack/pulumi-tools.sh)" $(GOTEST) -v -timeout 30m -run 'TestRenderMode' ./infra/

test-pulumi-automation:
	IGWLAB_PULUMI_BIN="$$(bash hack/pulumi-tools.sh)" $(GOTEST) -v -timeout 30m -run 'TestAutomationAPI|TestInterruptedUp' ./runner/suite/

kube-tools: ## kube-apiserver and kube-controller-manager, built once into ~/.cache/igwlab/tools
	bash hack/kube-tools.sh

test-apiserver: test-apiserver-stack test-apiserver-hooks test-apiserver-charts ## the stack against a real kube-apiserver + etcd on loopback, its after-update checks on the emulated pool (needs etcd: apt-get install etcd-server); its three parts run side by side under make -j

# Each test starts its own kube-apiserver and etcd on free ports and its own Pulumi home, so
# the parts can run at once: they wait on the Pulumi engine and the API server more than on
# CPU. They are three processes, not parallel tests, because the stack's tests set the Pulumi
# CLI's environment (t.Setenv), which a parallel test may not. The stack's own test took 50 s
# alone; side by side the three parts took 101-130 s each. The three run one test binary, the
# one make test and make test-e2e keep in $(TESTBIN) (go test -c leaves it as it is when it is
# up to date; a link of runner/cli's tests, with the Pulumi and Kubernetes SDKs, is 20 s of CPU
# on 2 cores), in runner/cli as go test runs it, -test.v for each test's time.
APISERVER_TEST = $(TESTBIN)/github.com/igwlab/igwlab/runner/cli.test
APISERVER_RUN = cd runner/cli && IGWLAB_PULUMI_BIN="$$(bash ../../hack/pulumi-tools.sh)" \
	IGWLAB_KUBE_BIN="$$(bash ../../hack/kube-tools.sh)" $(APISERVER_TEST) -test.count=1 -test.timeout=30m -test.v
test-apiserver-binary:
	$(GO) test -c -o $(APISERVER_TEST) ./runner/cli

test-apiserver-stack: test-apiserver-binary
	$(APISERVER_RUN) -test.run '^TestAPIServerTier$$'

test-apiserver-hooks: test-apiserver-binary
	$(APISERVER_RUN) -test.run '^TestAPIServerTier(Hooks|Diagnose|Doctor)$$'

test-apiserver-charts: test-apiserver-binary
	$(APISERVER_RUN) -test.run '^TestAPIServerTierWithIstioCharts$$'

# A nested module: Istio 1.31's dependencies conflict with the program's (see infra/istioproof).
test-istio: ## Istio 1.31.0's own charts (Helm SDK, then a real kube-apiserver) and control plane on what the program renders
	cd infra/istioproof && $(GO) vet ./... && \
		IGWLAB_KUBE_BIN="$$(bash ../../hack/kube-tools.sh)" $(GO) test -count=1 -timeout 30m ./...

vet: ## go vet over make test's packages (LAB=all: every package) and a gofmt check of every file
	pkgs="$$($(TESTPLAN) packages -lab $(LAB))" && $(GO) vet $$pkgs
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

# -parallel 16: the four serve configurations, each over four servers (caseParts), at once.
# Their cases mostly wait out h2spec's 2 s timeouts, not the CPU: with eight servers the tier
# kept the two cores 32% busy (95 s), with sixteen 48% (70 s).
test-h2spec: ## the conformance tier alone: h2spec case by case against igwlab serve at both codecs and two stream caps (docs/envoy-conformance.md), h2spec 5.1.2 at the default cap, h2load killed mid-run, and Envoy's own integration tests replayed as a client drives them; builds h2spec on first use
	bash hack/apt-need.sh h2load:nghttp2-client
	IGWLAB_H2SPEC_BIN="$$(bash hack/h2spec-tool.sh)" $(GO) test $(GOTESTFLAGS) -count=1 -timeout 20m -parallel 16 ./runner/conformance/
