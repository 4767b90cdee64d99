#!/bin/sh
# Session 35, second call: the fatbin rebuilt for main plus the reduce's
# phase marks in kq_rd_levels_timed (call 1's seeding changes reverted);
# every cudakern test on it and kquant quantize cpu against cuda; then
# the loop and run kernels of two m-tiles in blocks of 128 threads
# (KQUANT_CUDA_LOOP_THREADS=128: twice the blocks, a reduced set's 256
# two to a multiprocessor) against 256: the identity tests of loops and
# breaths with it, then BenchmarkLloydPhases on the reduced sets,
# BenchmarkBreathPhases and Go traces of 100 default k = 256 runs (every
# region's median by tracesum), 2 rounds alternating; last,
# BenchmarkSeedPhases with its reduced sets (a baseline).
# Binaries: .gpu/s35/p.txz; images .gpu/s35/imgs; carry [".gpu/s35"].
# (KQUANT_CUDA_LOOP_THREADS was a switch of that call's binary only: the
# 128-thread blocks were slower and were reverted; NOTES round 32.)
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s35
kq_check
cd cudakern
(KQUANT_CUDA_LOOP_THREADS=128 KQUANT_FATBIN=$F timeout 100 $B/cudakern.test -test.v -test.run 'Breath|Lloyd|Identity|Spec|Chain' -test.timeout 95s) > $O/tests-128.log 2>&1
echo "tests at 128 threads rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests-128.log) pass, $(grep -c '^--- FAIL' $O/tests-128.log) fail, $(grep -c identical $O/tests-128.log) identical"
grep -E '^--- FAIL|panic' $O/tests-128.log | head
kq_tracesum .gpu/s35
for r in 1 2; do
	for th in 256 128; do
		echo "== $r threads=$th"
		KQUANT_CUDA_LOOP_THREADS=$th KQUANT_FATBIN=$F timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases/.*reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		KQUANT_CUDA_LOOP_THREADS=$th KQUANT_FATBIN=$F timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		for img in home.jpg graf1.png altai-5120.png; do
			KQUANT_CUDA_LOOP_THREADS=$th KQUANT_FATBIN=$F timeout 40 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $th $r failed"
			/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$th-$r /" >> $O/regions.txt
		done
		echo "round $r $th done $(el) s"
	done
done > $O/ab.txt 2>&1
awk '$2=="bench.run"||$2=="kmeans.breathe"||$2=="kmeans.starts"||$2=="kmeans.refine"' $O/regions.txt
grep -E 'reduced|Breath' $O/ab.txt | sed 's/-16 / /' | cut -c1-400
KQUANT_FATBIN=$F timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkSeedPhases/.*reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | tee $O/seed-phases.txt
echo "done $(el) s"
