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
# (default 3), kquant quantize --json with --backend cpu, with --backend
# cuda and with --backend auto (the default: the GPU starts in the
# background and an input that comes before it is up runs on the CPU), and
# prints the medians of the process's wall time (start, CUDA's start,
# decode, clustering, encode) and of the clustering time, the share of the
# GPU run's wall time spent clustering, the in-process total (from decode
# on, without the process's and CUDA's start), whether the outputs are the
# same bytes, and where auto ran. ALT, when set to VAR=value settings (e.g.
# ALT=KQUANT_CUDA_COARSE=cpu), adds a run of the GPU with those in its
# environment, and its columns.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU=${GPU:-$ROOT/.gpu}
KQ=$GPU/kquant
KS=${KS:-16 64 256}
RUNS=${RUNS:-3}
work=$(mktemp -d)

# medians over RUNS runs: prints "wall total cluster backend", the run of
# median wall time
measure() {
	backend=$1 in=$2 k=$3 out=$4 envs=${5:-}
	i=0
	: >"$work/t"
	while [ $i -lt "$RUNS" ]; do
		t0=$(date +%s%N)
		env $envs "$KQ" quantize -q --force --json --backend "$backend" -k "$k" -o "$out" "$in" >"$work/j"
		t1=$(date +%s%N)
		sed 's/.*"timings_ms":{\([^}]*\)}.*"backend":"\([^"]*\)".*/\1,"backend":\2/' "$work/j" | tr ',' '\n' |
			awk -F: -v w=$(((t1 - t0) / 1000000)) '/"total"/{t=$2} /"cluster"/{c=$2} /"backend"/{b=$2} END{print w, t, c, b}' >>"$work/t"
		i=$((i + 1))
	done
	sort -n "$work/t" | awk -v n="$RUNS" 'NR == int((n+1)/2) {print $1, $2, $3, $4}'
}

alt_head= alt_rule=
if [ -n "${ALT:-}" ]; then
	alt_head=" GPU $ALT wall ms | cluster ms | same bytes |" alt_rule="---|---|---|"
fi
printf '| image | k | CPU wall ms | CPU cluster ms | GPU wall ms | GPU total ms | GPU cluster ms | GPU clustering share | same bytes | auto wall ms | auto ran on |%s\n' "$alt_head"
printf '|---|---|---|---|---|---|---|---|---|---|---|%s\n' "$alt_rule"
for in in "$GPU"/png/*.png; do
	name=$(basename "$in" .png)
	for k in $KS; do
		set -- $(measure cpu "$in" "$k" "$work/cpu.png")
		cw=$1 cc=$3
		set -- $(measure cuda "$in" "$k" "$work/gpu.png")
		gw=$1 gt=$2 gc=$3
		set -- $(measure auto "$in" "$k" "$work/auto.png")
		aw=$1 ab=$4
		case $ab in cpu) ;; *) ab=gpu ;; esac
		same=no
		cmp -s "$work/cpu.png" "$work/gpu.png" && cmp -s "$work/cpu.png" "$work/auto.png" && same=yes
		share=$(awk -v c="$gc" -v t="$gw" 'BEGIN{printf "%.0f%%", 100*c/t}')
		alt=
		if [ -n "${ALT:-}" ]; then
			set -- $(measure cuda "$in" "$k" "$work/alt.png" "$ALT")
			asame=no
			cmp -s "$work/cpu.png" "$work/alt.png" && asame=yes
			alt=$(printf ' %.0f | %.0f | %s |' "$1" "$3" "$asame")
		fi
		printf '| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %.0f | %s |%s\n' "$name" "$k" "$cw" "$cc" "$gw" "$gt" "$gc" "$share" "$same" "$aw" "$ab" "$alt"
	done
done
rm -rf "$work"
