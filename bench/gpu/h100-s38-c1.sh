#!/bin/sh
# Session 38, first call: the bounded loop (kq_lloyd_steps_bounded_*) for
# the four-m-tile fast kernels' batches. Rebuild the fatbin, then
# TestBoundedLoop alone, every cudakern test, BenchmarkLloydPhases with
# and without it (KQUANT_CUDA_BOUNDED=off), Go traces of 100 default
# k = 256 runs, 3 rounds alternating, and kquant quantize cpu against cuda.
# Binaries: .gpu/s38/p.txz; images .gpu/s38/imgs; carry [".gpu/s38"].
# Ran on main (437a7fb) with the patch's first form: a queue a warp, distances by differences; the
# change was not merged (bench/cuda/NOTES.md, round 35).
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s38
kq_build
(cd cudakern && KQUANT_FATBIN=$F timeout 150 $B/cudakern.test -test.v -test.run 'TestBounded' -test.timeout 140s) > $O/bounded.log 2>&1
echo "bounded rc=$? $(el) s"; grep -E '^--- |^(ok|FAIL|PASS)|panic|Error|error' $O/bounded.log | head -20
grep -E 'graf1.png rgb k=256|home.jpg rgb k=256|altai-5120.png rgb k=256' $O/bounded.log | head -6
kq_tests
cd cudakern
for r in 1 2; do for v in on off; do
	echo "== $r $v"
	KQUANT_CUDA_BOUNDED=$v KQUANT_FATBIN=$F timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases/(home|graf1|altai-5120).(jpg|png)$' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
done; done > $O/lloyd-phases.txt
cat $O/lloyd-phases.txt | cut -c1-400
kq_tracesum .gpu/s38
export KQUANT_FATBIN=$F
kq_regions KQUANT_CUDA_BOUNDED "on off" 3
awk '$2=="kmeans.refine"' $O/regions.txt | sort
unset KQUANT_FATBIN
cd $R
kq_e2e
echo "done $(el) s"
