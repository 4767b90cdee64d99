#!/bin/sh
# Session 25, first call (the fatbin of c68af40): every cudakern test on
# this tree (breathing's orders from a ranking, kmeans' side only), then
# the default runs' stages, 5 rounds alternating, against session 24's
# last binary (cudakern-c4.test: byValue's full sorts), and a Go trace of
# 100 graf1 k = 256 runs each.
# Binaries: cudakern.test (this tree) and cudakern-c4.test in .gpu/s25/b.tgz.
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s25/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s25/imgs
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g
(cd cudakern && timeout 400 $B/cudakern.test -test.v -test.timeout 390s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head
for r in 1 2 3 4 5; do
	for v in c4 new; do
		t=cudakern.test; [ $v = c4 ] && t=cudakern-c4.test
		(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 20x) > /tmp/g/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
for v in c4 new; do
	t=cudakern.test; [ $v = c4 ] && t=cudakern-c4.test
	(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 100x -test.trace /tmp/g/trace-$v.out) > /tmp/g/trace-$v.log 2>&1
	echo "trace $v rc=$? $(el) s"
done
tar czf $O/c1.tgz -C /tmp/g .
