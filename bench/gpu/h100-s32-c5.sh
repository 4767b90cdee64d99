#!/bin/sh
# Session 32, fifth call: a breath's launches as one CUDA graph
# (graph.go), with and without the breath after next (predict). Every
# cudakern test on the fatbin of call 2 (kernels.cu unchanged since),
# BenchmarkLaunchCost, then Go traces of 100 default k = 256 runs on
# home, graf1 and altai (BenchmarkRunStages), 2 rounds alternating
# 0f48d4e (cudakern-old.test), this tree, this tree with
# KQUANT_CUDA_PREDICT=off and with KQUANT_CUDA_GRAPH=off.
# Binaries: .gpu/s32/b.tgz; images .gpu/s32/imgs; carry [".gpu/s32"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s32/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32/imgs
F=$R/cudakern/kernels.fatbin
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
(cd cudakern && KQUANT_FATBIN=$F timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic|_test.go' /tmp/g/tests.log | grep -v "breaths out taken\|identical (" | head -20
for r in 1 2; do
	for v in old new predoff graphoff; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		P=on; [ $v = predoff ] && P=off
		G=on; [ $v = graphoff ] && G=off
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && KQUANT_CUDA_PREDICT=$P KQUANT_CUDA_GRAPH=$G KQUANT_FATBIN=$([ $v != old ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
		echo "traces $v $r $(el) s"
	done
done
cp /tmp/g/tests.log $O/
tar czf /tmp/c5.tgz -C /tmp/g .
split -b 15m /tmp/c5.tgz $O/c5.tgz.
ls -la $O
