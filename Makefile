# gpu-platform: everything runs offline through the mock engine; see README.md.
#   make render [STACK=dev]   create .venv, install pinned requirements, render STACK into build/STACK
#   make test                 create .venv if needed, run the test suite
#   make check [STACK=dev]    validate a stack's config only
#   make check-manifest TENANT=t FILES="job.yaml ..." [STACK=dev]
#                             a tenant's pre-flight check of its workloads (docs/tenants.md)
#   make conformance          render every stack and check it against the vendored upstream schemas
#   make lint                 ruff (lint + import order) and mypy
#   make checkov              checkov over every stack's rendered manifests (after `make conformance`)
#   make mutate               mutation testing (mutmut); long, not part of `make test`
#   make vendor CHART=...     re-fetch a chart's upstream CRDs and defaults at its pinned version
#   make docs                 regenerate the config reference, docs/configuration.md
#   make schema               regenerate the JSON Schema of Pulumi.<stack>.yaml (schema/pulumi-stack.schema.json)
#   make diff [STACK=dev] [BASE=HEAD]  review what the working tree changes in STACK's render against BASE;
#                             exits 0 with or without changes (a change ends with the line "make diff:
#                             changes found ..."), 2 when a render fails; `python -m offline diff` itself
#                             exits 0 same, 1 changed, 2 a render failed, for CI (docs/rendering.md)
#   make bench                render time against tenant count, next to the SDK floor
#   make simulate [STACK=dev] [WORKLOAD=workloads/design-surge.yaml] [BASELINE=static] [SEEDS=10] [WITHOUT="headroom ..."]
#                 [ABLATIONS=1] [DISCOUNT=0.3]
#                             replay a workload through the stack: build/sim-STACK-WORKLOAD/report.json, report.md, plots
#   make plan [STACK=dev] [WORKLOAD=workloads/design-surge.yaml] [SLO="production.p95_time_to_start<=15m ..."]
#             [TRIALS=40] [SEEDS=3] [VERIFY_SEEDS=5] [RANGE=2] [FLOOR=0] [TIGHTEN=24] [RESUME=1] [EXACT=1]
#                             the cheapest stack that meets the service levels, by simulation (docs/capacity-planning.md):
#                             build/plan-STACK-WORKLOAD/plan.md, plan.json, frontier.png, the planned stack file and its diff
#   make bench-sim            the simulator on the Alibaba trace at 1x, 4x and 16x (prod): CPU s, scaling, peak RSS
#   make simulate-fleet WORKERS="prod tests/fixtures/fleet/prod-eu.yaml" [WORKLOAD=...] [SEEDS=5] [SPLIT=first]
#                 [DISPATCHER=incremental]   (or MANAGER=<manager stack>: its gpu-platform:fleet workers)
#                             a fleet of worker stacks behind one MultiKueue queue against the same clusters each
#                             with its own queues: build/sim-fleet-WORKERS-WORKLOAD/report.json, report.md
#   make claims               the design's five claims from replications (sim/claims.py): build/claims/claims.json
#                             and claims.md, and the committed copy the docs quote (docs/simulation-claims.json and
#                             the table in docs/simulation.md)
#   make doc-figures          the prod + Alibaba run docs/simulation.md quotes (SEEDS=5, static baseline, ablations;
#                             5 to 12 minutes): docs/simulation-prod-alibaba.json and the page's tables written from it
#   make doc-sharing          every GPU-sharing mode on prod + the Alibaba trace (SEEDS=3, no headroom; about 3 CPU
#                             minutes): docs/fractional-gpus-prod-alibaba.json, its tables in
#                             docs/fractional-gpus-measured.md and README.md
STACK ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACKS := $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml))
# Python caches compiled modules in __pycache__ (ignored by git) even where the environment turns that
# off: `make render` compiles the project's modules once and `make test` imports them from the cache.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: render test check check-manifest conformance lint mutate vendor docs schema diff bench simulate simulate-fleet bench-sim claims doc-figures doc-sharing clean plan

# A virtualenv already there (one shared by several clones through a symlink) is reused, not recreated.
$(VENV)/.installed: requirements.txt requirements-dev.txt
	@echo "Installing the pinned requirements into $(VENV), once (again only when a requirements file changes)."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

render: $(VENV)/.installed
	$(PY) -m offline render --stack $(STACK) --out build/$(STACK)

check: $(VENV)/.installed
	$(PY) -m offline check --stack $(STACK)

check-manifest: $(VENV)/.installed
	$(PY) -m offline check-manifest --stack $(STACK) --tenant $(TENANT) $(FILES)

test: $(VENV)/.installed
	scripts/ensure-promtool
	$(PY) -m pytest -q

# Each stack is checked against the Kubernetes version it deploys; any problem fails the target.
conformance: $(VENV)/.installed
	@set -e; for stack in $(STACKS); do \
	  $(PY) -m offline render --stack $$stack --out build/$$stack; \
	  version=$$($(PY) -m offline kubernetes-version --stack $$stack); \
	  echo "conformance: stack $$stack, Kubernetes $$version"; \
	  $(PY) -m offline validate --k8s-version $$version build/$$stack; \
	done

# checkov in its own virtualenv (requirements-checkov.txt); .checkov.yaml lists each accepted check
# and why. Scans the renders `make conformance` leaves in build/<stack>.
CHECKOV_VENV := .venv-checkov
$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

checkov: $(CHECKOV_VENV)/.installed
	@set -e; for stack in $(STACKS); do \
	  echo "checkov: stack $$stack"; \
	  $(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml -f build/$$stack/manifests.yaml; \
	done

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m mypy

# Scope and test selection live in pyproject.toml [tool.mutmut]; the score is in docs/testing.md.
mutate: $(VENV)/.installed
	$(PY) -m mutmut run
	$(PY) -m mutmut results

vendor: $(VENV)/.installed
	$(PY) -m offline vendor $(CHART)

# Render time against tenant count (10, 100, 1000) next to the SDK's own floor; figures, not a test.
bench: $(VENV)/.installed
	$(PY) -m offline.bench

WORKLOAD ?= workloads/design-surge.yaml
BASELINE ?=
SEED ?= 0
# A workload through the stack's derived config (sim/): report.json, report.md and PNG plots; BASELINE=static adds the
# fair static baseline (DISCOUNT=0.3: a commitment discount off its on-demand prices); SEEDS=10 (or 3-12) replicates,
# each figure a mean with its 95% interval; WITHOUT="borrowing spot ..." runs as if those mechanisms were off
# (sim/variants.py MECHANISMS); ABLATIONS=1 adds each mechanism off in turn, on the same seeds; SHARING=kai (or
# whole, time-slice, mig, all) shares GPUs among the trace's fractional tasks (docs/fractional-gpus-measured.md).
simulate: $(VENV)/.installed
	$(PY) -m offline simulate --stack $(STACK) --workload $(WORKLOAD) --seed $(SEED) $(if $(BASELINE),--baseline $(BASELINE)) \
	  $(if $(SEEDS),--seeds $(SEEDS)) $(foreach feature,$(WITHOUT),--without $(feature)) $(if $(ABLATIONS),--ablations) \
	  $(if $(DISCOUNT),--commitment-discount $(DISCOUNT)) $(if $(SHARING),--sharing $(SHARING))

# The service levels a plan meets unless SLO= names others (docs/capacity-planning.md has the grammar); each a
# SCOPE.METRIC<=BOUND without spaces. TRIALS x SEEDS is the search's budget in runs.
SLO ?= production.p95_time_to_start<=15m standard.p95_time_to_start<=2h inference.p95_time_to_gpu<=5m inference.unserved<=1%
TRIALS ?=
VERIFY_SEEDS ?=
RANGE ?=
FLOOR ?=
TIGHTEN ?=
RESUME ?=
EXACT ?=
plan: $(VENV)/.installed
	$(PY) -m offline plan --stack $(STACK) --workload $(WORKLOAD) --seed $(SEED) $(foreach slo,$(SLO),--slo '$(slo)') \
	  $(if $(TRIALS),--trials $(TRIALS)) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(VERIFY_SEEDS),--verify-seeds $(VERIFY_SEEDS)) \
	  $(if $(RANGE),--range $(RANGE)) $(if $(FLOOR),--floor $(FLOOR)) $(if $(TIGHTEN),--tighten $(TIGHTEN)) $(if $(RESUME),--resume) \
	  $(if $(EXACT),--no-early-stop)
WORKERS ?= prod tests/fixtures/fleet/prod-eu.yaml
FLEET_WORKLOAD ?= workloads/alibaba-gpu-2023.yaml
# A fleet (docs/fleet-simulation.md): WORKERS are stack names or stack files; the fleet and its baseline (each cluster
# with its own queues) on the same seeds; SPLIT=first homes all work on the first worker (a burst one region sees).
simulate-fleet: $(VENV)/.installed
	$(PY) -m offline simulate-fleet $(if $(MANAGER),--stack $(MANAGER),--workers "$$(echo $(WORKERS) | tr ' ' ',')") \
	  --workload $(FLEET_WORKLOAD) \
	  --seed $(SEED) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(SPLIT),--split $(SPLIT)) $(if $(DISPATCHER),--dispatcher $(DISPATCHER))

# The simulator's cost on prod with the Alibaba trace replayed 1x, 4x and 16x; figures, not a test.
bench-sim: $(VENV)/.installed
	$(PY) -m offline.bench_sim

# Every claim's variants over its seeds in a process pool; a few minutes on 2 cores. Same stacks, same bytes.
claims: $(VENV)/.installed
	$(PY) -m offline claims --write-docs

# The documented prod + Alibaba replication (offline/doc_figures.py), its quoted figures into the committed JSON and
# the tables of docs/simulation.md (tests/test_doc_figures.py reads them back). The run itself goes to
# build/sim-prod-alibaba-gpu-2023/; `$(PY) -m offline.doc_figures --from-report R --write-docs` reuses a report.json.
doc-figures: $(VENV)/.installed
	$(PY) -m offline.doc_figures --write-docs

# The whole-trace sharing-mode replication (offline/doc_sharing.py): its quoted figures into
# docs/fractional-gpus-prod-alibaba.json and the tables of docs/fractional-gpus-measured.md and README.md
# (tests/test_doc_sharing.py reads them back). About 3 CPU minutes.
doc-sharing: $(VENV)/.installed
	$(PY) -m offline.doc_sharing --write-docs

# Regenerate the config reference in docs/configuration.md from the models' descriptions.
docs: $(VENV)/.installed
	$(PY) -m config.reference --write

# The JSON Schema editors check stack files with; each Pulumi.<stack>.yaml names it in its first line.
schema: $(VENV)/.installed
	$(PY) -m config.schema --write schema/pulumi-stack.schema.json
	$(PY) -m sim.schema --write schema/workload.schema.json

BASE ?= HEAD
# Markdown review of a change: resources added, removed and changed by URN, and the summary tables that changed.
# A change is what a review is for, so its exit 1 becomes a plain line and exit 0; a failed render stays an error.
diff: $(VENV)/.installed
	@status=0; $(PY) -m offline diff --stack $(STACK) --base $(BASE) || status=$$?; \
	if [ $$status -eq 1 ]; then echo "make diff: changes found in stack $(STACK) against $(BASE), listed above"; exit 0; fi; \
	exit $$status

clean:
	rm -rf build mutants $(VENV) $(CHECKOV_VENV)
