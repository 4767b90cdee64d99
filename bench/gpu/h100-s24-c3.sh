#!/bin/sh
# Session 24, third call (the fatbin committed at c68af40): the loop
# kernel's passes on the reduced set with fewer blocks
# (KQUANT_CUDA_LOOP_POINTS: the fewest points a block), by
# BenchmarkLloydPhases and the default runs' stages; and byValue's
# orders (this binary) against sort.SliceStable's (the first call's,
# cudakern-c1.test), both with the breath out chained.
# KQUANT_CUDA_LOOP_POINTS was an experiment, reverted after this call:
# fewer blocks made each pass slower (bench/cuda/NOTES.md, round 24).
# Binaries: cudakern.test (this tree) and cudakern-c1.test in .gpu/s24/b.tgz.
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s24/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s24/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g3
for p in 0 1024 2048 4096; do
	(cd cudakern && KQUANT_CUDA_LOOP_POINTS=$p timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases' -test.benchtime 20x) > /tmp/g3/phases-$p.log 2>&1
	echo "phases $p rc=$? $(el) s"
done
for r in 1 2; do
	for p in 0 1024 2048 4096; do
		(cd cudakern && KQUANT_CUDA_LOOP_POINTS=$p timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 30x) > /tmp/g3/stages-p$p-$r.log 2>&1
		echo "stages $p $r rc=$? $(el) s"
	done
	for v in c1 new; do
		t=cudakern.test; [ $v = c1 ] && t=cudakern-c1.test
		(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 30x) > /tmp/g3/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
tar czf $O/c3.tgz -C /tmp/g3 .
