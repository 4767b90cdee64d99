#!/bin/sh
# gpu-check.sh: compile the CUDA kernels and run the GPU tests and
# benchmarks on a machine with an NVIDIA GPU, nvcc 13 and no Go.
#
# Build the test binaries first, on a machine with Go:
#
#   CGO_ENABLED=0 go test -c -o .gpu/cudakern.test ./cudakern
#   CGO_ENABLED=0 go test -c -o .gpu/kmeans.test ./kmeans
#   cp -r ../shared/images .gpu/images      # the test images
#
# then, in the repository root on the GPU machine:
#
#   sh scripts/gpu-check.sh
#
# Steps (STEPS="build test bench ncu" by default; any subset):
#   build  runs the //go:generate lines of cudakern/gen.go: nvcc writes
#          cudakern/kernels.fatbin and kernels.fatbin.sha256 (commit both)
#   test   the cudakern and kmeans tests, GPU identity tests included; the
#          test binary loads the fatbin just built (KQUANT_FATBIN)
#   bench  the benchmarks (BENCH, a -test.bench pattern; BENCHTIME)
#   ncu    instructions per kernel from Nsight Compute, if it is there
# Logs and the fatbin go to $OUT (default .gpu/out); a table ends the output.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU=${GPU:-$ROOT/.gpu}
OUT=${OUT:-$GPU/out}
STEPS=${STEPS:-build test bench ncu}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-20x}
mkdir -p "$OUT"
export KQUANT_IMAGES=${KQUANT_IMAGES:-$GPU/images}
status=0

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

if has build; then
	echo "== build: nvcc $(nvcc --version | tail -1)"
	start=$(date +%s)
	(
		cd "$ROOT/cudakern" || exit 1
		grep '^//go:generate ' gen.go | sed 's#^//go:generate ##' | while read -r line; do
			echo "+ $line"
			sh -c "$line" || exit 1
		done
	) 2>&1 | tee "$OUT/build.log" || status=1
	echo "build took $(($(date +%s) - start)) s; $(wc -c <"$ROOT/cudakern/kernels.fatbin") bytes"
	cp "$ROOT/cudakern/kernels.fatbin" "$ROOT/cudakern/kernels.fatbin.sha256" "$OUT/"
	cuobjdump --list-elf "$ROOT/cudakern/kernels.fatbin" >>"$OUT/build.log" 2>&1
	cuobjdump --list-ptx "$ROOT/cudakern/kernels.fatbin" >>"$OUT/build.log" 2>&1
fi
export KQUANT_FATBIN="$ROOT/cudakern/kernels.fatbin"

if has test; then
	echo "== test"
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv | tee -a "$OUT/build.log"
	(cd "$ROOT/cudakern" && "$GPU/cudakern.test" -test.v -test.timeout 20m) >"$OUT/test-cudakern.log" 2>&1 || status=1
	(cd "$ROOT/kmeans" && "$GPU/kmeans.test" -test.timeout 20m) >"$OUT/test-kmeans.log" 2>&1 || status=1
	grep -E '^(--- |ok|FAIL|PASS)' "$OUT/test-cudakern.log" | grep -v '^--- PASS' | tail -40
	grep -E 'identical|fallbacks|driver' "$OUT/test-cudakern.log" | head -5
	echo "identity runs: $(grep -c identical "$OUT/test-cudakern.log") identical, $(grep -c 'labels differ\|centroids differ\|differ' "$OUT/test-cudakern.log") differing"
	tail -3 "$OUT/test-kmeans.log"
fi

if has bench; then
	echo "== bench"
	(cd "$ROOT/cudakern" && "$GPU/cudakern.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.timeout 20m) >"$OUT/bench.log" 2>&1 || status=1
	grep -E 'unique colours|FAIL|panic' "$OUT/bench.log"
	awk 'BEGIN { printf "%-48s %10s %10s %9s %8s %9s\n", "benchmark", "wall ms", "kernel ms", "pairs/ns", "fallback", "device MB" }
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name); wall = ""; k = ""; p = ""; f = ""; m = ""
		for (i = 3; i < NF; i++) {
			if ($(i+1) == "ns/op") wall = sprintf("%.4f", $i / 1e6)
			if ($(i+1) == "kernel-ms") k = $i
			if ($(i+1) == "pairs/ns") p = $i
			if ($(i+1) == "fallback-share") f = $i
			if ($(i+1) == "device-MB") m = $i
		}
		printf "%-48s %10s %10s %9s %8s %9s\n", name, wall, k, p, f, m
	}' "$OUT/bench.log"
fi

if has ncu && command -v ncu >/dev/null 2>&1; then
	echo "== ncu (one steady assignment of all 14.7 M pixels of altai-5120.png; inst = warp instructions)"
	for k in ${NCU_K:-16 256 1024}; do
		(cd "$ROOT/cudakern" && KQUANT_CUDA_SELFTEST=0 ncu --kernel-name regex:"kq_(fast|small|idp|ima)" --launch-skip 3 --launch-count 1 \
			--metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
			"$GPU/cudakern.test" -test.run '^$' -test.bench "AssignPixels/${NCU_VARIANT:-auto}/k=$k/steady" -test.benchtime 1x) >"$OUT/ncu-k.log" 2>&1
		cat "$OUT/ncu-k.log" >>"$OUT/ncu.log"
		grep -E '  kq_|inst_executed|duration|issue_active|warps_active|pipe|dram|cycles_elapsed' "$OUT/ncu-k.log" | sed "s/^ */k=$k /"
		rm -f "$OUT/ncu-k.log"
	done
fi
exit $status
