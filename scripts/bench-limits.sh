#!/usr/bin/env bash
# Limit-scenario benchmarks of llmrun against a fresh `llmrun mock` process per
# run on loopback (issue 25; the README's "Limits under real traffic" table).
#
#   scripts/bench-limits.sh tight [RUNS] [llmrun flags]  8 in flight, 600 RPM, 60k ITPM, 1s burst,
#                                                        200 requests, limits given: wall vs ideal, 429s
#   scripts/bench-limits.sh ramp [RUNS] [llmrun flags]   2,000 requests, --rpm 6000 given and learned,
#                                                        mock --acceleration: refused, wall vs the ramp's minimum
#   scripts/bench-limits.sh down [llmrun flags]          a mock answering 500 from the start: exit code,
#                                                        wall, the error named
#
# The ramp's minimum is what the mock admits at best (a 5s window admits
# max(20, 2x the previous one's), at most 100/s with one second of burst):
# 37.8s for 2,000 (limiter's TestAccelerationLimits computes it the same way).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: scripts/bench-limits.sh tight|ramp|down [RUNS] [llmrun flags]}
shift
runs=10
if [[ $mode != down && ${1:-} =~ ^[0-9]+$ ]]; then
	runs=$1
	shift
fi
dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmrun-bench.XXXXXX")}
mkdir -p "$dir"
go build -o "$dir/llmrun" .

mock=
stop_mock() { [[ -n $mock ]] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null || true; mock=; }
trap stop_mock EXIT
# start_mock FLAGS...: a fresh mock on a free port; sets $port.
start_mock() {
	port=$((20000 + RANDOM % 20000))
	"$dir/llmrun" mock --addr "127.0.0.1:$port" "$@" >"$dir/mock.log" 2>&1 &
	mock=$!
	for _ in $(seq 50); do
		curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "llmrun mock did not start:" >&2
	cat "$dir/mock.log" >&2
	exit 1
}
# runwall NAME: the run's own wall time from its summary (without process start and input check).
runwall() { grep -o '"wall_seconds": *[0-9.]*' "$dir/$1.summary.json" | head -1 | sed 's/.*: *//'; }
stat() { curl -fs "http://127.0.0.1:$port/mock/stats" | grep -o "\"$1\": *[0-9]*" | tr -dc 0-9; }
input() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"custom_id\":\"request-%08d\",\"prompt\":\"Tell me one fact about the number %d.\"}\n", i, i }' >"$2"
}
# batch NAME ARGS...: llmrun batch against the mock; prints "wall_s exit_code".
batch() {
	local name=$1 rc=0 t0 t1
	shift
	rm -f "$dir/in.out.jsonl" "$dir/in.out.jsonl".* "$dir/in.errors.jsonl"
	t0=$(date +%s.%N)
	"$dir/llmrun" batch --provider openai --base-url "http://127.0.0.1:$port/v1" --model m -q \
		--summary "$dir/$name.summary.json" "$@" >"$dir/$name.out" 2>"$dir/$name.log" || rc=$?
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v rc="$rc" 'BEGIN { printf "%.2f %d\n", b - a, rc }'
}

echo "load: $(uptime)"
case $mode in
tight)
	input 200 "$dir/in.jsonl"
	ideal=19 # (200 - the 10 of a full bucket) / 10 per second
	for i in $(seq "$runs"); do
		start_mock --rpm 600 --itpm 60000 --burst 1s
		read -r wall rc < <(batch "tight$i" "$dir/in.jsonl" --concurrency 8 --rpm 600 --itpm 60000 --burst 1s "$@")
		rw=$(runwall "tight$i")
		echo "run $i: ${wall}s process, ${rw}s run: $(awk -v w="$rw" -v i="$ideal" 'BEGIN { printf "%.3f", i / w }') of ideal (${ideal}s; process $(awk -v w="$wall" -v i="$ideal" 'BEGIN { printf "%.3f", i / w }')), 429s $(stat rate_limited), exit $rc"
		stop_mock
	done
	;;
ramp)
	input 2000 "$dir/in.jsonl"
	least=37.8
	for how in given learned; do
		flags=(--rpm 6000)
		[[ $how == learned ]] && flags=()
		for i in $(seq "$runs"); do
			start_mock --rpm 6000 --acceleration
			read -r wall rc < <(batch "ramp$how$i" "$dir/in.jsonl" --concurrency 64 "${flags[@]}" "$@")
			rw=$(runwall "ramp$how$i")
			echo "limits $how, run $i: ${wall}s process, ${rw}s run = $(awk -v w="$rw" -v l="$least" 'BEGIN { printf "%.3f", w / l }')x the ramp's minimum (${least}s; process $(awk -v w="$wall" -v l="$least" 'BEGIN { printf "%.3f", w / l }')x), refused $(stat accelerated) for acceleration + $(($(stat rate_limited) - $(stat accelerated))) other 429s of $(stat attempts) attempts, exit $rc"
			stop_mock
		done
	done
	;;
down)
	input 200 "$dir/in.jsonl"
	start_mock --outage
	read -r wall rc < <(batch down "$dir/in.jsonl" "$@")
	echo "outage from the start: exit $rc after ${wall}s; the run said:"
	grep -v '^$' "$dir/down.log" | tail -4
	stop_mock
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
