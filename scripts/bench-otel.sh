#!/usr/bin/env bash
# Tracing's CPU cost (the README's Observability section quotes it): N
# streamed requests at --concurrency 64 against a separate `llmrun mock`,
# traced (OTLP/HTTP to scripts/otlpsink, a discarding receiver in its own
# process, so its CPU is not counted) and untraced in turn, PAIRS pairs;
# prints each pair's whole-process CPU (user+sys) and the median ratio.
#
#   scripts/bench-otel.sh [N [PAIRS [llmrun flags]]]   default 20000 requests, 6 pairs
#
# Needs GNU time (/usr/bin/time), curl and awk. Run it when the machine is
# quiet (uptime): a few percent is the figure, and noise is larger.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-20000}
pairs=${2:-6}
shift $(($# < 2 ? $# : 2))
dir=$(mktemp -d "${TMPDIR:-/tmp}/llmrun-bench-otel.XXXXXX")
go build -o "$dir/llmrun" .
go build -o "$dir/otlpsink" ./scripts/otlpsink
port=$((20000 + RANDOM % 20000))
sink=$((port + 1))
"$dir/llmrun" mock --addr "127.0.0.1:$port" >"$dir/mock.log" 2>&1 &
mock=$!
"$dir/otlpsink" "127.0.0.1:$sink" >"$dir/sink.log" 2>&1 &
sinkpid=$!
trap 'kill "$mock" "$sinkpid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null 2>&1 && curl -fs "http://127.0.0.1:$sink/stats" >/dev/null 2>&1 && break
	sleep 0.1
done
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "{\"custom_id\":\"request-%08d\",\"prompt\":\"Tell me one fact about the number %d.\"}\n", i, i }' >"$dir/in.jsonl"

# run traced|untraced: one run under GNU time; prints its CPU seconds.
run() {
	local mode=$1 env=()
	shift
	rm -f "$dir"/out.jsonl*
	[ "$mode" = traced ] && env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink")
	env "${env[@]}" /usr/bin/time -o "$dir/time" -f '%U %S' "$dir/llmrun" batch "$dir/in.jsonl" -o "$dir/out.jsonl" \
		--provider openai --base-url "http://127.0.0.1:$port/v1" --model m --concurrency 64 -q "$@" 2>"$dir/$mode.log" ||
		{ echo "llmrun failed, see $dir/$mode.log" >&2; exit 1; }
	awk '{ printf "%.3f\n", $1 + $2 }' "$dir/time"
}

echo "load: $(uptime)"
run traced "$@" >/dev/null # warm-up
run untraced "$@" >/dev/null
for i in $(seq "$pairs"); do
	a=$(run traced "$@")
	b=$(run untraced "$@")
	echo "$a $b" | awk '{ printf "traced %.2fs untraced %.2fs ratio %.3f\n", $1, $2, $1 / $2 }'
done | tee "$dir/pairs"
echo "median ratio of $pairs pairs: $(awk '{ print $6 }' "$dir/pairs" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
echo "spans received (exports spans bytes): $(curl -fs "http://127.0.0.1:$sink/stats")"
echo "load: $(uptime)"
