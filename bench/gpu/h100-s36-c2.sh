#!/bin/sh
# Session 36, second call (no build: call 1's fatbin, now in the tree and
# embedded): the device's plan only after a breath that kept its depth
# (the default), against KQUANT_CUDA_PLAN=always (call 1's) and =off.
# TestBreathOutChained; BenchmarkBreathPhases, 2 rounds alternating; Go
# traces of 100 default k = 256 runs, 2 rounds (tracesum, now with each
# region's mean); then every cudakern test and kquant quantize cpu
# against cuda.
# Binaries: .gpu/s36/p.txz; images .gpu/s36/imgs; carry [".gpu/s36"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s36
cd cudakern
timeout 120 $B/cudakern.test -test.run 'TestBreathOutChained' -test.v > $O/chained.log 2>&1
echo "chained rc=$? $(el) s: $(grep -c -- '--- PASS' $O/chained.log) pass, $(grep -c -- '--- FAIL' $O/chained.log) fail"
grep -E -- '--- FAIL|panic|from chains' $O/chained.log | head -30
for r in 1 2; do
	for v in heur always off; do
		echo "== $r $v"
		KQUANT_CUDA_PLAN=$v timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done > $O/breath-phases.txt 2>&1
cat $O/breath-phases.txt
echo "breath phases $(el) s"
kq_tracesum .gpu/s36
kq_regions KQUANT_CUDA_PLAN "heur always off" 2
cd $R
kq_verify
echo "done $(el) s"
