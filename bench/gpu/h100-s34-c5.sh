#!/bin/sh
# Session 34, fifth call: the loop and run kernels' blocks capped
# (KQUANT_CUDA_LOOP_BLOCKS, an experiment): on a reduced set of 32 768
# parts the fast loops take 128 blocks of 256 points, each flushing its
# k·(1+dim) sums to the same addresses by atomics. BenchmarkLloydPhases
# (reduced sets), BenchmarkBreathPhases and BenchmarkRunStages (k = 256)
# at caps none, 96, 64, 48, 32, 2 rounds. Binary: .gpu/s34/p.txz (d292d30
# and the hook, its fatbin embedded; the hook is not kept); carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
cd cudakern
for r in 1 2; do
	for c in 0 96 64 48 32; do
		echo "== $r cap=$c $(el) s"
		KQUANT_CUDA_LOOP_BLOCKS=$c timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases/.*/reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | awk '{printf "%s %s", $1, $3; for (i=4;i<NF;i++) if ($(i+1) ~ /pass-cycles|pass-barrier|ns\/pass/) printf " %s=%s", $(i+1), $i; print ""}'
		KQUANT_CUDA_LOOP_BLOCKS=$c timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed "s/  */ /g"
		KQUANT_CUDA_LOOP_BLOCKS=$c timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$' -test.benchtime 100x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | awk '{print $1, $3}'
	done
done 2>&1 | tee $O/caps.txt
