#!/bin/sh
# Session 25, third call (the second call's fatbin, in the tree): the
# two-m-tile loop only where its blocks fit one to a multiprocessor (at
# most 256 points an SM; the second call took it below 512, and home's
# 52 k colours ran slower a pass): every cudakern test, then the default
# runs' stages with it (default) and without (KQUANT_CUDA_M2=off), 5
# rounds alternating, and a Go trace of 100 graf1 k = 256 runs each.
# Binary: cudakern.test (this tree) in .gpu/s25/b.tgz; run with carry [".gpu/s25"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s25/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s25/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
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
tar czf $O/c3.tgz -C /tmp/g .
