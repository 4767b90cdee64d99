#!/bin/sh
# gpu-e2e.sh: kquant quantize end to end on the CPU and on the GPU, side by
# side, on a machine with an NVIDIA GPU and no Go.
#
# Build the command and gather the images first, on a machine with Go:
#
#   CGO_ENABLED=0 go build -o .gpu/kquant ./cmd/kquant
#   mkdir -p .gpu/png && for f in ../shared/images/*; do \
#     convert "$f" "PNG24:.gpu/png/$(basename "${f%.*}").png"; done
#
# then, in the repository root on the GPU machine: sh scripts/gpu-e2e.sh
#
# For every image and k (KS, default "16 64 256") it runs, RUNS times each
# (default 3), kquant quantize --json with --backend cpu and with --backend
# cuda, and prints the median total and clustering times, the share of the
# GPU run's wall time spent clustering, and whether both outputs are the
# same bytes. ALT, when set to VAR=value settings (e.g.
# ALT=KQUANT_CUDA_COARSE=cpu), adds a third run of the GPU with those in its
# environment, and its columns.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU=${GPU:-$ROOT/.gpu}
KQ=$GPU/kquant
KS=${KS:-16 64 256}
RUNS=${RUNS:-3}
work=$(mktemp -d)

# median ms of "total" and "cluster" over RUNS runs: prints "total cluster"
measure() {
	backend=$1 in=$2 k=$3 out=$4 envs=${5:-}
	i=0
	: >"$work/t"
	while [ $i -lt "$RUNS" ]; do
		env $envs "$KQ" quantize -q --force --json --backend "$backend" -k "$k" -o "$out" "$in" |
			sed 's/.*"timings_ms":{\([^}]*\)}.*/\1/' | tr ',' '\n' |
			awk -F: '/"total"/{t=$2} /"cluster"/{c=$2} END{print t, c}' >>"$work/t"
		i=$((i + 1))
	done
	sort -n "$work/t" | awk -v n="$RUNS" 'NR == int((n+1)/2) {print}'
}

alt_head= alt_rule=
if [ -n "${ALT:-}" ]; then
	alt_head=" GPU $ALT total ms | cluster ms | same bytes |" alt_rule="---|---|---|"
fi
printf '| image | k | CPU total ms | CPU cluster ms | GPU total ms | GPU cluster ms | GPU clustering share | same bytes |%s\n' "$alt_head"
printf '|---|---|---|---|---|---|---|---|%s\n' "$alt_rule"
for in in "$GPU"/png/*.png; do
	name=$(basename "$in" .png)
	for k in $KS; do
		set -- $(measure cpu "$in" "$k" "$work/cpu.png")
		ct=$1 cc=$2
		set -- $(measure cuda "$in" "$k" "$work/gpu.png")
		gt=$1 gc=$2
		same=no
		cmp -s "$work/cpu.png" "$work/gpu.png" && same=yes
		share=$(awk -v c="$gc" -v t="$gt" 'BEGIN{printf "%.0f%%", 100*c/t}')
		alt=
		if [ -n "${ALT:-}" ]; then
			set -- $(measure cuda "$in" "$k" "$work/alt.png" "$ALT")
			asame=no
			cmp -s "$work/cpu.png" "$work/alt.png" && asame=yes
			alt=$(printf ' %.0f | %.0f | %s |' "$1" "$2" "$asame")
		fi
		printf '| %s | %s | %.0f | %.0f | %.0f | %.0f | %s | %s |%s\n' "$name" "$k" "$ct" "$cc" "$gt" "$gc" "$share" "$same" "$alt"
	done
done
rm -rf "$work"
