#!/bin/sh
# Session 31, third call (par.Ranges in four ranges a goroutine, the
# plan without container/heap, Open's regions): every cudakern test; then
# Go traces of 100 default k = 256 runs on home, graf1 and altai
# (BenchmarkRunStages), 3 rounds alternating main (12f1dc4,
# cudakern-old.test) and this tree. The traces come back as
# $TAG.tgz.aa, .ab, … (the device tool's 16 MiB a file).
# Binaries: .gpu/s31/b.tgz; images .gpu/s31/imgs; carry [".gpu/s31"].
set -u
TAG=${TAG:-c3}; ROUNDS=${ROUNDS:-1 2 3}
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s31/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s31/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
(cd cudakern && timeout 300 $B/cudakern.test -test.v -test.timeout 290s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head
for r in $ROUNDS; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
		echo "traces $v $r $(el) s"
	done
done
cp /tmp/g/tests.log $O/
tar czf /tmp/$TAG.tgz -C /tmp/g .
split -b 15m /tmp/$TAG.tgz $O/$TAG.tgz.
ls -la $O
