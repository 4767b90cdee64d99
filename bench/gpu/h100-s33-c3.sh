#!/bin/sh
# Session 33, third call: the reduced set's levels and finish in one
# cooperative launch (kq_rd_levels), a level in two phases (rd_split:
# each tile finds its part's cut from the parts' histograms). Rebuilds the fatbin (gzipped into
# $OUT), runs the reduce, reduced-open, layout and identity tests on it,
# ncu's durations of the reduce's kernels for 3 reductions of graf1 into
# 32768 parts (KQUANT_CUDA_REDUCE=launch, then the new kernel), then
# BenchmarkReduce (fin = 7) and BenchmarkRunStages (k = 256) on home,
# graf1, altai, 2 rounds alternating 833565c (cudakern-old.test, its
# embedded fatbin) and this tree.
# Binaries: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
grep -i "error" /tmp/g/build.txt | head -10
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 150 $B/cudakern.test -test.v -test.timeout 140s -test.run 'TestReduceOnDevice|TestReduces|TestReducedOpen|TestReducedSets|TestParamsLayout|TestFatbinMatchesSources|TestIdentityRuns|TestBreathOutChained') > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic|reduce_test.go' $O/tests.log | head -20
cd cudakern
for m in launch coop; do
	KQUANT_CUDA_REDUCE=$([ $m = launch ] && echo launch) KQUANT_FATBIN=$F timeout 60 ncu --clock-control none -k regex:kq_rd_ --metrics gpu__time_duration.sum $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > /tmp/g/ncu-$m.log 2>&1
	echo "ncu $m rc=$?"; grep -E "^  kq_rd_|gpu__time_duration" /tmp/g/ncu-$m.log | paste - - | awk '{print $1, $(NF)}' | awk '{s[$1]+=$2; c[$1]++} END {for (k in s) printf "%s n=%d mean=%.1f per-reduce=%.1f\n", k, c[k], s[k]/c[k], s[k]/3}'
done
cp /tmp/g/ncu-*.log $O/ 2>/dev/null
echo "== benches $(el) s"
for r in 1 2; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		echo "== $r $v $(el) s"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkReduce/.*/32768/fin=7$' -test.benchtime 200x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$' -test.benchtime 100x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | awk '{print $1, $3, $4, $(NF-1), $NF}'
	done
done
ls -la $O
