#!/usr/bin/env bash
# Time from a signal to `braincode run` exiting with its report, and survivors after it.
#
# A temporary home whose SessionStart hook starts two long sleeps (one in the background) and
# whose only model is unreachable, so every run is inside the hook when it is signalled.
# Usage: scripts/bench-signals.sh [BINARY] [RUNS]   (default: target/release/braincode, 10)
# Prints one line per signal: median milliseconds from kill to exit, exit codes seen, reports
# printed, and processes left alive (goal: 0).
set -euo pipefail
bin=$(realpath "${1:-target/release/braincode}")
runs=${2:-10}
work=$(mktemp -d)
trap 'pkill -f "^sleep 4321.123$" 2>/dev/null || true; rm -rf "$work"' EXIT
export BRAINCODE_HOME="$work/home"
mkdir -p "$BRAINCODE_HOME" "$work/repo"
git -C "$work/repo" init -q
roles='frontend backend designer dba devops security qa summarize oracle librarian rush review routeBrain pet imageMaker'
role_map=$(for r in $roles; do printf '"%s": {"modelId": "x/dead", "fallbackModelIds": []},' "$r"; done)
cat > "$BRAINCODE_HOME/models.json" <<JSON
{"models": [{"id": "x/dead", "provider": "x", "modelId": "dead", "api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1"}]}
JSON
cat > "$BRAINCODE_HOME/brains.json" <<JSON
{"brains": [{"id": "t", "extends": "brain", "name": "t",
  "planner": {"modelId": "x/dead", "fallbackModelIds": []}, "roles": {${role_map%,}}}]}
JSON
echo '{"version": 1, "defaultBrainId": "t"}' > "$BRAINCODE_HOME/settings.json"
echo '{"hooks": {"SessionStart": [{"hooks": [{"command": "sleep 4321.123 & sleep 4321.123", "trusted": true}]}]}}' \
  > "$BRAINCODE_HOME/hooks.json"

for sig in TERM INT HUP KILL; do
  times=(); codes=(); reports=0; survivors=0
  for _ in $(seq "$runs"); do
    (cd "$work/repo" && exec "$bin" run --heuristic "fix the build" > "$work/out" 2>/dev/null) &
    pid=$!
    until pgrep -f '^sleep 4321.123$' > /dev/null; do sleep 0.01; done
    start=$(date +%s%N)
    kill -"$sig" "$pid"
    code=0; { wait "$pid"; } 2>/dev/null || code=$?
    end=$(date +%s%N)
    sleep 0.5
    left=$(pgrep -f '^sleep 4321.123$' | wc -l || true)
    survivors=$((survivors + left))
    pkill -f '^sleep 4321.123$' 2>/dev/null || true
    times+=($(( (end - start) / 1000000 )))
    codes+=("$code")
    reports=$((reports + $(grep -c '^Status:' "$work/out" || true)))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "SIG$sig: median ${median} ms to exit; exit codes $(printf '%s\n' "${codes[@]}" | sort -u | tr '\n' ' '); reports $reports/$runs; survivors $survivors"
done
