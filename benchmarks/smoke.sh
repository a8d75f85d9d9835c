#!/usr/bin/env bash
# Every benchmark once with --smoke: tiny sizes, the same code paths and imports, no
# targets judged, no results file written. CI runs it (make bench-smoke) so a moved
# import or a changed interface cannot break a benchmark silently.
# Needs what the benchmarks need: Docker with the simroute-sandbox and simroute-browser
# images, Chromium, redis-server and the bundled model (not the bake-off's extra models).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="$root/.venv/bin/python"
# The checkout's own code is what is measured, whichever copy the virtualenv installed.
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

benchmarks=(
  decision_latency.py
  perturbation_decision.py
  safety_latency.py
  learned_decision.py
  divergence_size.py
  shadow_overhead.py
  store_ingest.py
  store_scaling.py
  export_scaling.py
  mcp_overhead.py
  tracing_overhead.py
  routing_quality.py
  http_overhead.py
  store_lock.py
  "dashboard_queries.py --redis"
  shell_pool.py
  shell_exec.py
  shell_state_equality.py
  fork_rehearsal.py
  browser_actions.py
  sim_step_latency.py
  adapter_latency.py
  sim_format.py
  sim_first_call.py
  sim_history_recall.py
  sim_fidelity.py
  mcp_git_alignment.py
  model_bakeoff.py
  episode_reset.py
  episode_load.py
  episode_clients.py
  sim_to_real.py
  tune_loop.py
)

timings=()
started_all=$SECONDS
for entry in "${benchmarks[@]}"; do
  read -r -a command <<<"$entry"
  echo "=== benchmarks/$entry --smoke"
  started=$SECONDS
  "$python" "benchmarks/${command[0]}" "${command[@]:1}" --smoke
  timings+=("$(printf '%5ds  %s' $((SECONDS - started)) "$entry")")
done

echo
echo "smoke run: every benchmark ran ($((SECONDS - started_all)) s in all)"
printf '%s\n' "${timings[@]}"
