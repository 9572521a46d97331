#!/usr/bin/env bash
# Whole-process benchmarks of llmrun against a separate `llmrun mock`
# process on loopback (the README's Performance table quotes them).
#
#   scripts/bench.sh scale N [llmrun flags]   N simple requests at --concurrency 512:
#                                             the run's and the rerun's peak RSS, wall and CPU
#   scripts/bench.sh stream N [llmrun flags]  N requests, streamed and plain, 3 runs each:
#                                             client CPU (user+sys) per output token
#   BENCH_DIR=D scripts/bench.sh rerun - [llmrun flags]
#                                             BENCH_RERUNS reruns of the output a scale run
#                                             left in D (its mock's port too: the base URL is
#                                             part of each request's fingerprint); with
#                                             BENCH_BEFORE=BIN, that build and this one in turn
#
# llmrun flags come after the script's own, so they win (--concurrency 64).
# BENCH_MOCK_FLAGS are passed to `llmrun mock`, e.g. BENCH_MOCK_FLAGS='--answer-words 61'
# for answers of about 109 tokens (the default answers are about 35).
#
# LLMRUN_PROFILE_DIR, when set, reaches llmrun only (never the mock): each run
# writes its cpu.pprof and heap.pprof to a directory of its own under it
# (first, rerun1, ...). BENCH_SMAPS=1 samples each run's
# /proc/PID/smaps_rollup every 0.2 s and prints its peak anonymous and
# file-backed resident memory (Linux).
#
# BENCH_RERUNS is the number of reruns after a scale run (default 3; a 10M
# rerun takes minutes). BENCH_BIN, when set, is the llmrun binary to measure (a build of another
# commit, say) instead of a build of this tree.
#
# Needs GNU time (/usr/bin/time, Debian package "time") and awk. Work files go
# to $BENCH_DIR (default: a new directory under ${TMPDIR:-/tmp}); a 10M-line
# scale run needs about 10 GB there. Run it when the machine is quiet
# (uptime): the figures are CPU- and memory-bound.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: scripts/bench.sh scale|stream N [llmrun flags]}
n=${2:?usage: scripts/bench.sh scale|stream N [llmrun flags]}
shift 2
dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmrun-bench.XXXXXX")}
mkdir -p "$dir"
if [ -n "${BENCH_BIN:-}" ]; then
	cp "$BENCH_BIN" "$dir/llmrun"
else
	go build -o "$dir/llmrun" .
fi
port=$((20000 + RANDOM % 20000))
if [ "$mode" = rerun ]; then
	port=$(cat "$dir/port" 2>/dev/null) || { echo "$dir holds no scale run to rerun (BENCH_DIR)" >&2; exit 2; }
fi
echo "$port" >"$dir/port"
# shellcheck disable=SC2086 # BENCH_MOCK_FLAGS is a list of flags
env -u LLMRUN_PROFILE_DIR "$dir/llmrun" mock --addr "127.0.0.1:$port" ${BENCH_MOCK_FLAGS:-} >"$dir/mock.log" 2>&1 &
mock=$!
trap 'kill "$mock" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null || { echo "llmrun mock did not start:" >&2; cat "$dir/mock.log" >&2; exit 1; }

# input N FILE: N simple lines of about 86 bytes.
input() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"custom_id\":\"request-%08d\",\"prompt\":\"Tell me one fact about the number %d.\"}\n", i, i }' >"$2"
}

# smaps PID OUT: until PID ends, samples its smaps_rollup and writes the peak
# "anon_MB file_MB" (resident, at the sample where RSS peaked) to OUT.
smaps() {
	local pid=$1 out=$2 child=""
	for _ in $(seq 100); do
		child=$(tr -d " " <"/proc/$pid/task/$pid/children" 2>/dev/null || true)
		[ -n "$child" ] && break
		sleep 0.05
	done
	[ -n "$child" ] || return 0
	while [ -r "/proc/$child/smaps_rollup" ]; do
		awk '/^Rss:/ { r = $2 } /^Anonymous:/ { a = $2 } END { if (r) print r, a }' "/proc/$child/smaps_rollup" 2>/dev/null || true
		sleep 0.2
	done | awk '$1 > r { r = $1; a = $2 } END { printf "%.1f %.1f\n", a / 1024, (r - a) / 1024 }' >"$out"
}

# run NAME ARGS...: llmrun batch under GNU time; prints "wall_s rss_MB cpu_s".
run() {
	local name=$1 pid sampler=""
	shift
	local -a env=()
	[ -n "${LLMRUN_PROFILE_DIR:-}" ] && env=("LLMRUN_PROFILE_DIR=$LLMRUN_PROFILE_DIR/$name")
	env "${env[@]}" /usr/bin/time -o "$dir/$name.time" -f '%e %M %U %S' \
		"${BENCH_EXE:-$dir/llmrun}" batch --provider openai --base-url "http://127.0.0.1:$port/v1" --model m \
		--concurrency 512 -q --summary "$dir/$name.summary.json" "$@" 2>"$dir/$name.log" &
	pid=$!
	if [ -n "${BENCH_SMAPS:-}" ]; then
		smaps "$pid" "$dir/$name.smaps" &
		sampler=$!
	fi
	wait "$pid" ||
		{ echo "llmrun failed, see $dir/$name.log" >&2; tail -3 "$dir/$name.log" >&2; exit 1; }
	[ -z "$sampler" ] || wait "$sampler"
	awk '{ printf "%.2f %.1f %.2f\n", $1, $2 / 1024, $3 + $4 }' "$dir/$name.time"
	[ -s "$dir/$name.smaps" ] && echo "$name: at peak RSS, anonymous $(cut -d' ' -f1 "$dir/$name.smaps") MB, file-backed $(cut -d' ' -f2 "$dir/$name.smaps") MB" >&2
	return 0
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

case $mode in
scale)
	input "$n" "$dir/in.jsonl"
	echo "load: $(uptime)"
	read -r wall rss cpu < <(run first "$dir/in.jsonl" "$@")
	echo "run of $n requests: wall ${wall}s, peak RSS ${rss} MB, CPU ${cpu}s"
	for i in $(seq "${BENCH_RERUNS:-3}"); do run "rerun$i" "$dir/in.jsonl" "$@"; done >"$dir/reruns"
	echo "rerun (all skipped), median of ${BENCH_RERUNS:-3}: wall $(cut -d' ' -f1 "$dir/reruns" | median)s, peak RSS $(cut -d' ' -f2 "$dir/reruns" | median) MB, CPU $(cut -d' ' -f3 "$dir/reruns" | median)s"
	;;
rerun)
	echo "load: $(uptime)"
	[ -z "${BENCH_BEFORE:-}" ] || cp "$BENCH_BEFORE" "$dir/before"
	for i in $(seq "${BENCH_RERUNS:-3}"); do
		for bin in ${BENCH_BEFORE:+before} llmrun; do
			read -r wall rss cpu < <(BENCH_EXE="$dir/$bin" run "$bin$i" "$dir/in.jsonl" "$@")
			echo "$bin: rerun (all skipped): wall ${wall}s, peak RSS ${rss} MB, CPU ${cpu}s"
		done
	done
	echo "load: $(uptime)"
	;;
stream)
	input "$n" "$dir/in.jsonl"
	echo "load: $(uptime)"
	for stream in true false; do
		for i in 1 2 3; do
			rm -f "$dir/in.out.jsonl" "$dir/in.out.jsonl.state.json"
			read -r _ _ cpu < <(run "s$stream$i" "$dir/in.jsonl" --stream="$stream" "$@")
			tokens=$(grep -o '"output_tokens": *[0-9]*' "$dir/s$stream$i.summary.json" | head -1 | tr -dc 0-9)
			awk -v c="$cpu" -v t="$tokens" 'BEGIN { printf "%.3f %s\n", c / t * 1e6, c }'
		done >"$dir/stream-$stream"
		echo "--stream=$stream: $(cut -d' ' -f1 "$dir/stream-$stream" | tr '\n' ' ')µs of client CPU per output token (median $(cut -d' ' -f1 "$dir/stream-$stream" | median)), CPU median $(cut -d' ' -f2 "$dir/stream-$stream" | median)s, $tokens output tokens"
	done
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
