#!/bin/sh
# bench/gpu-variants.sh: on the GPU machine (nvcc 13, no Go), rebuild the
# kernels, run the identity tests of every algorithm × update strategy and
# the algorithm benchmarks of bench/README.md. Build first, with Go:
#
#   CGO_ENABLED=0 go test -c -o .gpu/cudakern.test ./cudakern
#   CGO_ENABLED=0 go build -o .gpu/kquant ./cmd/kquant
#   cp -r ../shared/images .gpu/images
#
# then in the repository root on the GPU machine: sh bench/gpu-variants.sh
# STEPS (default "build test bench"); logs, tables, plots and the fatbin go
# to $OUT (default .gpu/out).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU=$ROOT/.gpu
OUT=${OUT:-$GPU/out}
STEPS=${STEPS:-build test bench}
mkdir -p "$OUT"
export KQUANT_IMAGES=$GPU/images KQUANT_CACHE_DIR=$OUT/cache
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
if has build; then
	(cd "$ROOT/cudakern" && grep '^//go:generate ' gen.go | sed 's#^//go:generate ##' | while read -r line; do
		sh -c "$line" || exit 1
	done) >"$OUT/build.log" 2>&1 || { echo "BUILD FAILED"; tail -40 "$OUT/build.log"; exit 1; }
	cp "$ROOT/cudakern/kernels.fatbin" "$ROOT/cudakern/kernels.fatbin.sha256" "$OUT/"
	echo "== build $(($(date +%s) - t0)) s"
fi
export KQUANT_FATBIN=$ROOT/cudakern/kernels.fatbin
if has test; then
	(cd "$ROOT/cudakern" && timeout 200 "$GPU/cudakern.test" -test.v -test.run "${TESTS:-Variant|Epoch2|AutoSwitchesGPU|WorkCounts|IdentityPixels|Fallback|LargeK|LargeDim|EmptyClusters|SessionErrors|Seeder|Dedup}" -test.timeout 190s) >"$OUT/test.log" 2>&1
	echo "== test $(($(date +%s) - t0)) s: $(grep -c '^--- PASS' "$OUT/test.log") pass, $(grep -c '^--- FAIL' "$OUT/test.log") fail"
	grep -E '^(--- FAIL|FAIL|ok|panic)|_test.go:[0-9]+: .*(differ|want|Epoch|still)' "$OUT/test.log" | head -30
fi
if has bench; then
	# raw outputs beside $OUT (at most 8 files come back): packed into bench.tgz
	B=$GPU/bout
	rm -rf "$B" && mkdir -p "$B"
	export KQUANT_CACHE_DIR=$B/cache
	K=$GPU/kquant
	timeout 100 $K bench --preset fig5 --sigma2 0.001,0.0125,0.05,0.1,0.2,0.3,1 --backends cuda --algos lloyd,wuhong,bounds,auto --max-iter 30 -o "$B/fig5" >"$B/fig5.md" 2>"$B/fig5.err"
	echo "== fig5 $(($(date +%s) - t0)) s"
	timeout 40 $K bench --preset table1 --backends cuda --algos lloyd,bounds,wuhong,auto --updates auto,sorted --max-iter 30 -o "$B/table1" >"$B/table1.md" 2>"$B/table1.err"
	timeout 40 $K bench --preset table1 --backends cpu -j 1 --algos lloyd --max-iter 30 >"$B/table1-cpu1.md" 2>"$B/table1-cpu1.err"
	echo "== table1 $(($(date +%s) - t0)) s"
	I="$GPU/images/altai-5120.png $GPU/images/starry_night.jpg $GPU/images/smarties.png"
	timeout 50 $K bench --backends cuda --algos lloyd,gemm,bounds,wuhong,auto --updates auto,atomic,sorted,host -k 16,256 $I -o "$B/images-cuda" >"$B/images-cuda.md" 2>"$B/images-cuda.err"
	timeout 50 $K bench --backends cpu --algos lloyd,gemm,bounds,wuhong,kdtree,auto -k 16,256 $I -o "$B/images-cpu" >"$B/images-cpu.md" 2>"$B/images-cpu.err"
	echo "== images $(($(date +%s) - t0)) s"
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$B/gpu.txt" 2>&1
	(cd "$B" && tar czf "$OUT/bench.tgz" .)
	for f in fig5 table1 images-cuda images-cpu; do grep -A30 'auto ms/iter' "$B/$f.md" | cut -c1-160 | head -14; done
fi
