# Two commands do all the set-up on a fresh machine:
#   make demo   install everything, then run simroute in front of a real MCP server
#   make test   install everything, then run the test suite
.PHONY: setup demo test bench check docs bench-smoke fuzz tune-check

setup:
	./scripts/setup.sh

demo: setup
	.venv/bin/simroute demo

# The guard rails CI runs before the tests: lint and format, the import contracts
# (pyproject.toml [tool.importlinter]), types where they are checked, module size.
check: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports
	.venv/bin/mypy
	.venv/bin/python scripts/check_module_size.py

test: setup
	./scripts/test.sh

# Every fuzz suite (tests/fuzz) at full strength: 5,000 generated cases per surface
# (CI runs a smoke count), one process at a time (no xdist: the suites fuzz live
# processes). Prints the seed and the cases each surface ran; FUZZ_EXAMPLES=N for
# another count, SIMROUTE_FUZZ_SEED=S to rerun a run.
FUZZ_EXAMPLES ?= 5000
fuzz: setup
	SIMROUTE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) .venv/bin/python -m pytest tests/fuzz -p no:xdist -q

# `simroute tune`'s own checks (tests marked `tune`), never run by CI: the download of the
# locked llama-cpp-python source package (--prepare) and, with the training stack installed
# (pip install -e '.[tune]'), the training round trip on a tiny model. `make test` deselects
# them. TUNE_PYTHON: an interpreter whose environment has the extra (another venv keeps
# .venv without torch, as CI has it).
TUNE_PYTHON ?= .venv/bin/python
tune-check: setup
	PYTHONPATH=$(CURDIR) $(TUNE_PYTHON) -m pytest -m tune -p no:xdist -q tests

bench: setup
	.venv/bin/python benchmarks/decision_latency.py
	.venv/bin/python benchmarks/perturbation_decision.py
	.venv/bin/python benchmarks/safety_latency.py
	.venv/bin/python benchmarks/learned_decision.py
	.venv/bin/python benchmarks/routing_quality.py
	.venv/bin/python benchmarks/mcp_overhead.py
	.venv/bin/python benchmarks/sim_step_latency.py
	.venv/bin/python benchmarks/adapter_latency.py
	.venv/bin/python benchmarks/sim_format.py
	.venv/bin/python benchmarks/shell_pool.py
	.venv/bin/python benchmarks/shell_exec.py
	.venv/bin/python benchmarks/shell_state_equality.py
	.venv/bin/python benchmarks/browser_actions.py
	.venv/bin/python benchmarks/http_overhead.py
	.venv/bin/python benchmarks/store_scaling.py
	.venv/bin/python benchmarks/export_scaling.py
	.venv/bin/python benchmarks/store_lock.py
	.venv/bin/python benchmarks/store_ingest.py
	.venv/bin/python benchmarks/dashboard_queries.py --redis
	.venv/bin/python benchmarks/shadow_overhead.py
	.venv/bin/python benchmarks/divergence_size.py
	.venv/bin/python benchmarks/sim_fidelity.py
	.venv/bin/python benchmarks/mcp_git_alignment.py
	.venv/bin/python benchmarks/episode_reset.py
	.venv/bin/python benchmarks/episode_load.py
	.venv/bin/python benchmarks/episode_clients.py
	.venv/bin/python benchmarks/sim_to_real.py
	.venv/bin/python benchmarks/stack_load.py
	.venv/bin/pip install -r benchmarks/requirements-bakeoff.txt
	.venv/bin/python benchmarks/model_bakeoff.py

# The documentation site, built strictly (a warning fails it) into site/.
docs:
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site

# Every benchmark with tiny sizes (CI): checks that each still runs, judges no target.
bench-smoke: setup
	./benchmarks/smoke.sh
