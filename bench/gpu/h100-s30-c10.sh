#!/bin/sh
# Session 30, tenth call: where a breath started on the device spends the
# device's time (BenchmarkBreathPhases, CUDA events between its launches),
# 2 rounds of 50 default k = 256 runs; then the breathing tests again.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
for r in 1 2; do
	(cd cudakern && timeout 120 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x) > $O/phases-$r.log 2>&1
	echo "round $r rc=$?"
done
(cd cudakern && timeout 120 $B/cudakern.test -test.v -test.run 'TestBreathOutChained|TestIdentityRuns' -test.timeout 110s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c identical $O/tests.log) identical"
