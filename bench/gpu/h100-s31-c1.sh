#!/bin/sh
# Session 31, first call (the plan's breath in without container/heap):
# the breathing and identity tests; BenchmarkBreathPhases, 2 rounds of 50
# default k = 256 runs, main (12f1dc4, cudakern-old.test) and this tree
# alternating; Go traces of 100 default k = 256 runs on home, graf1 and
# altai (BenchmarkRunStages), 3 rounds alternating; a CPU profile of 300
# graf1 runs of this tree. Traces and the profile come back as
# $TAG.tgz.aa, .ab, … (the device tool's 16 MiB a file).
# Binaries: .gpu/s31/b.tgz; images .gpu/s31/imgs; carry [".gpu/s31"].
set -u
TAG=${TAG:-c1}; ROUNDS=${ROUNDS:-1 2 3}
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s31/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s31/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g
(cd cudakern && timeout 150 $B/cudakern.test -test.v -test.run 'TestBreathOutChained|TestIdentityRuns|TestRunEnd' -test.timeout 140s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head
for r in 1 2; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		(cd cudakern && timeout 120 $B/$t -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x) > /tmp/g/phases-$v-$r.log 2>&1
		echo "phases $v $r rc=$? $(el) s"
	done
done
for r in $ROUNDS; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
		echo "traces $v $r $(el) s"
	done
done
(cd cudakern && timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256$' -test.benchtime 300x -test.cpuprofile /tmp/g/cpu-graf1.prof) > /tmp/g/cpu-graf1.log 2>&1
echo "cpu profile rc=$? $(el) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > /tmp/g/smi.txt
cp /tmp/g/tests.log $O/
tar czf /tmp/$TAG.tgz -C /tmp/g .
split -b 15m /tmp/$TAG.tgz $O/$TAG.tgz.
ls -la $O
