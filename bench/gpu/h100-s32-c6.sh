#!/bin/sh
# Session 32, sixth call: a breath's launches as one CUDA graph
# (graph.go) on the committed kernels (the breath after next dropped).
# Every cudakern test on the embedded fatbin, BenchmarkLaunchCost, then
# Go traces of 100 default k = 256 runs on home, graf1 and altai
# (BenchmarkRunStages), 3 rounds alternating 0f48d4e
# (cudakern-old.test), this tree, and this tree with
# KQUANT_CUDA_GRAPH=off.
# Binaries: .gpu/s32/b.tgz; images .gpu/s32/imgs; carry [".gpu/s32"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s32/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
(cd cudakern && timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head -20
(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLaunchCost' -test.benchtime 3000x -test.count 2) > /tmp/g/launch.log 2>&1
grep us/call /tmp/g/launch.log
for r in 1 2 3; do
	for v in old new graphoff; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		G=on; [ $v = graphoff ] && G=off
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && KQUANT_CUDA_GRAPH=$G timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
		echo "traces $v $r $(el) s"
	done
done
cp /tmp/g/tests.log $O/
tar czf /tmp/c6.tgz -C /tmp/g .
split -b 15m /tmp/c6.tgz $O/c6.tgz.
ls -la $O
