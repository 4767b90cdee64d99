#!/bin/sh
# Session 36, first call: the fatbin rebuilt with kq_br_plan (the next
# breath's grown centroids made on the device where the engine's plan
# keeps its depth, so that the device goes from one breath to the next with
# no host between). TestBreathOutChained first; BenchmarkBreathPhases with
# the plan and with KQUANT_CUDA_PLAN=off, 2 rounds alternating; Go traces
# of 100 default k = 256 runs, plan against off, 2 rounds (every region's
# median by tracesum); then every cudakern test and kquant quantize cpu
# against cuda, where time is left. (This call's binary planned after
# every breath, as KQUANT_CUDA_PLAN=always does since call 2.)
# Binaries: .gpu/s36/p.txz; images .gpu/s36/imgs; carry [".gpu/s36"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s36
kq_build
cd cudakern
KQUANT_FATBIN=$F timeout 120 $B/cudakern.test -test.run 'TestBreathOutChained|TestParams' -test.v > $O/chained.log 2>&1
echo "chained rc=$? $(el) s: $(grep -c '^--- PASS' $O/chained.log) pass, $(grep -c -- '--- FAIL' $O/chained.log) fail"
grep -E -- '--- FAIL|panic|breaths' $O/chained.log | head -30
for r in 1 2; do
	for v in plan off; do
		echo "== $r $v"
		KQUANT_CUDA_PLAN=$v KQUANT_FATBIN=$F timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done > $O/breath-phases.txt 2>&1
cat $O/breath-phases.txt
echo "breath phases $(el) s"
kq_tracesum .gpu/s36
export KQUANT_FATBIN=$F
kq_regions KQUANT_CUDA_PLAN "plan off" 2
cd $R
if [ $(el) -lt 440 ]; then kq_tests; fi
if [ $(el) -lt 560 ]; then kq_e2e; fi
echo "done $(el) s"
