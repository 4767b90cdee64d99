#!/bin/sh
# Session 25, second call: build the fatbin with the two-m-tile fast
# kernels' loops (kq_lloyd_steps_fast_*_m2), run every cudakern test on
# it, then the batches on small sets with the two-m-tile loop (default)
# against the four-m-tile one (KQUANT_CUDA_M2=off): the loop's phases on
# the reduced sets, the default runs' stages 5 rounds alternating, and a
# Go trace of 100 graf1 k = 256 runs each.
# Binary: cudakern.test (this tree) in .gpu/s25/b.tgz; run with carry [".gpu/s25"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s25/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s25/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
OUT=/tmp/gc STEPS=build GPU=$R/.gpu sh scripts/gpu-check.sh > $O/build.txt 2>&1
echo "build rc=$? $(el) s"; tail -3 $O/build.txt
tar czf $O/fatbin.tgz -C cudakern kernels.fatbin kernels.fatbin.sha256
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
mkdir -p /tmp/g
(cd cudakern && timeout 300 $B/cudakern.test -test.v -test.timeout 290s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic|differ' /tmp/g/tests.log | head
grep -E 'iterations batched by' /tmp/g/tests.log | head -20
for v in on off; do
	(cd cudakern && KQUANT_CUDA_M2=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases' -test.benchtime 20x) > /tmp/g/phases-$v.log 2>&1
	echo "phases $v rc=$? $(el) s"
done
for r in 1 2 3 4 5; do
	for v in on off; do
		(cd cudakern && KQUANT_CUDA_M2=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 20x) > /tmp/g/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
for v in on off; do
	(cd cudakern && KQUANT_CUDA_M2=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 100x -test.trace /tmp/g/trace-$v.out) > /tmp/g/trace-$v.log 2>&1
	echo "trace $v rc=$? $(el) s"
done
tar czf $O/c2.tgz -C /tmp/g .
