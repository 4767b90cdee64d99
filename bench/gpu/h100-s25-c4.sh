#!/bin/sh
# Session 25, fourth call (the third's fatbin): kq_profile_f32's points
# packed and uploaded behind the first batch's passes, not before them
# (cudakern.test, this tree) against d9fc240 (cudakern-c3.test): the tests
# of batches, profiles, breathing and identity, then a Go trace of 100
# graf1 k = 256 default runs and the default runs' stages, 3 rounds
# alternating.
# Binaries: cudakern.test and cudakern-c3.test in .gpu/s25/b.tgz; carry [".gpu/s25"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s25/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s25/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g
(cd cudakern && timeout 200 $B/cudakern.test -test.v -test.run 'TestLloydSteps|TestProfile|TestBreathOutChained|TestIdentityRuns|TestVariantRuns' -test.timeout 190s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head
for r in 1 2 3; do
	for v in c3 new; do
		t=cudakern.test; [ $v = c3 ] && t=cudakern-c3.test
		(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 100x -test.trace /tmp/g/trace-$v-$r.out) > /tmp/g/trace-$v-$r.log 2>&1
		(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 20x) > /tmp/g/stages-$v-$r.log 2>&1
		echo "$v $r rc=$? $(el) s"
	done
done
tar czf $O/c4.tgz -C /tmp/g .
