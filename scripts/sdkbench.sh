#!/usr/bin/env bash
# Client CPU per output token, llmrun against the official openai-go SDK
# (scripts/sdkbench: errgroup at the same concurrency), same server, same
# requests: a separate `llmrun mock --answer-words 61` (about 109 output
# tokens an answer) on loopback, the clients run in turn, A B A B. A third
# client, scripts/floorbench, reads the same answers and drops them (no
# parsing, no output): the floor under any client's CPU, which is mostly
# what the kernel costs to receive the server's segments; its tokens are
# the llmrun run's of the same round.
#
#   scripts/sdkbench.sh [N [ROUNDS [MODEL]]]   default 2000 requests, 3 rounds, gpt-4o-mini
#
# Client CPU is the client process's user+sys (GNU time); the server's is
# its own process's, read from /proc before and after each run. Prints
# each run, then the medians: µs of client CPU per output token, plain and
# streamed, llmrun/SDK and llmrun streamed/plain. Extra llmrun flags:
# BENCH_LLMRUN_FLAGS. BENCH_BEFORE=PATH adds a third client to every
# round, another llmrun build (the code before a change), run the same way.
# Needs GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-2000}
rounds=${2:-3}
model=${3:-gpt-4o-mini}
conc=${BENCH_CONCURRENCY:-64}
dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmrun-sdkbench.XXXXXX")}
mkdir -p "$dir"
go build -o "$dir/llmrun" .
(cd scripts/sdkbench && go build -o "$dir/sdkbench" .)
go build -o "$dir/floorbench" ./scripts/floorbench
mock=
trap '[ -n "$mock" ] && kill "$mock" 2>/dev/null || true' EXIT
for _ in 1 2 3 4 5; do # a random port may be taken: try another
	port=$((20000 + RANDOM % 20000))
	"$dir/llmrun" mock --addr "127.0.0.1:$port" --answer-words 61 >"$dir/mock.log" 2>&1 &
	mock=$!
	for _ in $(seq 50); do
		curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null 2>&1 && break
		kill -0 "$mock" 2>/dev/null || break
		sleep 0.1
	done
	curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null 2>&1 && break
done
curl -fs "http://127.0.0.1:$port/mock/stats" >/dev/null || { echo "llmrun mock did not start:" >&2; cat "$dir/mock.log" >&2; exit 1; }
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "{\"custom_id\":\"request-%08d\",\"prompt\":\"Tell me one fact about the number %d.\"}\n", i, i }' >"$dir/in.jsonl"
tck=$(getconf CLK_TCK)
# server_cpu: the mock's user+sys so far, in seconds.
server_cpu() { awk -v t="$tck" '{ printf "%.3f\n", ($14 + $15) / t }' "/proc/$mock/stat"; }

# timed NAME CMD...: runs CMD under GNU time; prints "client_cpu_s server_cpu_s wall_s".
timed() {
	local name=$1
	shift
	local s0
	s0=$(server_cpu)
	/usr/bin/time -o "$dir/$name.time" -f '%U %S %e' "$@" >"$dir/$name.stdout" 2>"$dir/$name.log" ||
		{ echo "$name failed, see $dir/$name.log" >&2; tail -3 "$dir/$name.log" >&2; exit 1; }
	awk -v s0="$s0" -v s1="$(server_cpu)" '{ printf "%.3f %.3f %.3f\n", $1 + $2, s1 - s0, $3 }' "$dir/$name.time"
}

llmrun_run() { # llmrun_run NAME STREAM [BINARY]
	rm -f "$dir/in.out.jsonl" "$dir/in.out.jsonl.state.json" "$dir/in.errors.jsonl"
	read -r c s w < <(timed "$1" "${3:-$dir/llmrun}" batch --provider openai --base-url "http://127.0.0.1:$port/v1" \
		--model "$model" --concurrency "$conc" -q --stream="$2" --summary "$dir/$1.summary.json" \
		${BENCH_LLMRUN_FLAGS:-} "$dir/in.jsonl")
	t=$(grep -o '"output_tokens": *[0-9]*' "$dir/$1.summary.json" | head -1 | tr -dc 0-9)
	echo "$t" >"$dir/tokens-$2"
	echo "$c $s $w $t"
}
before_run() { llmrun_run "$1" "$2" "$BENCH_BEFORE"; }
sdk_run() { # sdk_run NAME STREAM
	read -r c s w < <(timed "$1" "$dir/sdkbench" -base-url "http://127.0.0.1:$port/v1" -model "$model" \
		-n "$n" -concurrency "$conc" -stream="$2" -o "$dir/sdk.out.jsonl")
	t=$(awk '{ print $4 }' "$dir/$1.stdout")
	echo "$c $s $w $t"
}
floor_run() { # floor_run NAME STREAM: tokens are the llmrun run's of this round
	read -r c s w < <(timed "$1" "$dir/floorbench" -addr "127.0.0.1:$port" -model "$model" \
		-n "$n" -concurrency "$conc" -stream="$2")
	echo "$c $s $w $(cat "$dir/tokens-$2")"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "load: $(uptime)"
echo "client run: client CPU s, server CPU s, wall s, output tokens, µs client CPU/token, requests/s, client share of CPU"
for r in $(seq "$rounds"); do
	for stream in false true; do
		# The clients' order turns each round: a run is a few percent
		# cheaper right after another (warm caches), which a fixed order
		# gives to the same client every round. The floor goes last: its
		# tokens are the llmrun run's of the round.
		order=(llmrun sdk ${BENCH_BEFORE:+before})
		k=$(((r - 1) % ${#order[@]}))
		for client in "${order[@]:k}" "${order[@]:0:k}" floor; do
			name="$client-$stream-$r"
			read -r c s w t < <("${client}_run" "$name" "$stream")
			awk -v name="$name" -v c="$c" -v s="$s" -v w="$w" -v t="$t" -v n="$n" \
				'BEGIN { printf "%s %s %s %s %s %.3f %.0f %.2f\n", name, c, s, w, t, c / t * 1e6, n / w, c / (c + s) }' |
				tee -a "$dir/results"
		done
	done
done
med() { grep "^$1-$2-" "$dir/results" | awk -v f="$3" '{ print $f }' | median; }
lp=$(med llmrun false 6) sp=$(med sdk false 6) ls=$(med llmrun true 6) ss=$(med sdk true 6)
printf 'medians of %s rounds, %s requests at concurrency %s, model %s:\n' "$rounds" "$n" "$conc" "$model"
printf '  plain:    llmrun %.2f µs/token, SDK %.2f µs/token, llmrun/SDK %.2f; requests/s llmrun %s SDK %s; client share of CPU llmrun %s SDK %s\n' \
	"$lp" "$sp" "$(awk -v a="$lp" -v b="$sp" 'BEGIN { print a / b }')" "$(med llmrun false 7)" "$(med sdk false 7)" "$(med llmrun false 8)" "$(med sdk false 8)"
printf '  streamed: llmrun %.2f µs/token, SDK %.2f µs/token, llmrun/SDK %.2f; requests/s llmrun %s SDK %s; client share of CPU llmrun %s SDK %s\n' \
	"$ls" "$ss" "$(awk -v a="$ls" -v b="$ss" 'BEGIN { print a / b }')" "$(med llmrun true 7)" "$(med sdk true 7)" "$(med llmrun true 8)" "$(med sdk true 8)"
printf '  llmrun streamed/plain %.2f\n' "$(awk -v a="$ls" -v b="$lp" 'BEGIN { print a / b }')"
fp=$(med floor false 6) fs=$(med floor true 6)
printf '  floor (read and dropped): plain %.2f µs/token, streamed %.2f; floor streamed/llmrun plain %.2f; llmrun above the floor: plain %.2f, streamed %.2f, streamed/plain %.2f\n' \
	"$fp" "$fs" "$(awk -v a="$fs" -v b="$lp" 'BEGIN { print a / b }')" "$(awk -v a="$lp" -v b="$fp" 'BEGIN { print a - b }')" \
	"$(awk -v a="$ls" -v b="$fs" 'BEGIN { print a - b }')" "$(awk -v a="$ls" -v b="$fs" -v c="$lp" -v d="$fp" 'BEGIN { print (a - b) / (c - d) }')"
if [ -n "${BENCH_BEFORE:-}" ]; then
	bp=$(med before false 6) bs=$(med before true 6)
	printf '  before (%s): plain %.2f µs/token (after/before %.2f), streamed %.2f (after/before %.2f); requests/s plain %s streamed %s; client share plain %s streamed %s\n' \
		"$BENCH_BEFORE" "$bp" "$(awk -v a="$lp" -v b="$bp" 'BEGIN { print a / b }')" "$bs" "$(awk -v a="$ls" -v b="$bs" 'BEGIN { print a / b }')" \
		"$(med before false 7)" "$(med before true 7)" "$(med before false 8)" "$(med before true 8)"
fi
