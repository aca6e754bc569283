# mu-plugins: the reference plugin family for mu.
# `make help` lists the targets.

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/mu-org/mu-plugins/internal/cli.Version=$(VERSION)
PLUGINS   := $(patsubst cmd/%/main.go,%,$(wildcard cmd/*/main.go))

.PHONY: help build test unit lint fuzz bench integration demo image agent-image e2e-agents deps clean k8s-up k8s-down

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 14

build: ## build every binary, static, into bin/ (mode go-w whatever the umask: mu refuses a file its group or the world can write)
	@mkdir -p $(BIN)
	@for p in $(PLUGINS); do CGO_ENABLED=0 scripts/ticking.sh build "bin/$$p (a first build fetches modules and compiles them: minutes)" \
		$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/$$p ./cmd/$$p && chmod go-w $(BIN)/$$p || exit 1; done

demo: build ## drive the fake through every seam the way mu would, and narrate it
	@$(BIN)/mu-plugin-contract demo -- $(CURDIR)/$(BIN)/mu-plugin-fake

test: ## set up what the tests need (root on Debian: apt-get), then lint, every test under -race, and the integration suite
	@scripts/test.sh

unit: build ## the Go tests of every tier (-race), no set-up; TIERS=ssh,docker picks tiers (docs/testing.md)
	MU_TEST_TIERS=$(or $(TIERS),all) $(GO) test -race -count=1 -timeout 30m ./...

lint: ## gofmt, go vet, staticcheck, shellcheck
	@scripts/lint.sh

fuzz: ## run each fuzz target for FUZZTIME (default 20s)
	@scripts/fuzz.sh $(or $(FUZZTIME),20s)

bench: build ## every benchmark, ours beside the peer, with ratios
	@scripts/bench.sh

integration: build ## the docker-compose suite: up, test, always down
	@scripts/integration.sh

image: ## build the test image (no registry: mmdebstrap + docker import + Dockerfile.test); AGENTS=1 also the agent-ready image
	@integration/image/build.sh
	@if [ -n "$(AGENTS)" ]; then $(MAKE) --no-print-directory agent-image; fi

agent-image: ## build an agent-ready job image (Dockerfile.agent: tmux, flock, git and the agent CLIs; needs the npm registry)
	docker build -f Dockerfile.agent -t $(or $(AGENT_IMAGE),mu-plugins-agent:latest) .

e2e-agents: ## the harness adapters against the real agent CLIs on PATH (claude, codex), with their keys from the environment; a skip line each otherwise
	MU_E2E_AGENTS=1 $(GO) test -count=1 -v -run 'TestRealAgents' ./internal/tmuxjob/

k8s-up: ## bring up the test cluster by hand (NAME=dev; builds Kubernetes once); KUBECONFIG=/var/lib/mu-k8s/dev/kubeconfig
	@integration/k8s/up.sh $(or $(NAME),dev)

k8s-down: ## stop the test cluster NAME (default dev) and remove all it made
	@integration/k8s/down.sh $(or $(NAME),dev)

deps: ## install what the tests need (apt-get as root on Debian; else name what is missing)
	@scripts/deps.sh

clean: ## remove bin/
	rm -rf $(BIN)
