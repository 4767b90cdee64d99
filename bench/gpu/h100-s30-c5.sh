#!/bin/sh
# Session 30, fifth call (runEnd in speculate): every cudakern test, then
# Go traces of 100 default k = 256 runs on home, graf1 and altai
# (BenchmarkRunStages), 5 rounds alternating main
# (71cd6fe, cudakern-old.test), this tree with KQUANT_CUDA_SPEC=off, and
# this tree; the traces' region medians are made on the VM (tracesum).
# The traces come back as $TAG.tgz.aa, .ab, … (the device tool's 16 MiB a
# file). The sixth call (the read-ahead) ran it with TAG=c6 VARIANTS="old
# sync on": sync is this tree with KQUANT_CUDA_SPEC=sync.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
TAG=${TAG:-c5}; VARIANTS=${VARIANTS:-old off on}
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g
(cd cudakern && timeout 260 $B/cudakern.test -test.v -test.timeout 250s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head
for r in 1 2 3 4 5; do
	for v in $VARIANTS; do
		t=cudakern.test; spec=on
		case $v in old) t=cudakern-old.test ;; off | sync) spec=$v ;; esac
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && KQUANT_CUDA_SPEC=$spec timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
		echo "$v $r $(el) s"
	done
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > /tmp/g/smi.txt
tar czf /tmp/$TAG.tgz -C /tmp/g .
split -b 15m /tmp/$TAG.tgz $O/$TAG.tgz.
ls -la $O
