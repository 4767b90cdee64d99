#!/bin/sh
# Session 30, first call: the next breath in started on the device behind
# the breath out (kmeans.InBreather; cudakern speculate/takeSpec), no
# kernel changed (the committed fatbin). The GPU tests of cudakern, then
# BenchmarkRunStages at k = 256 on home, graf1 and altai, 3 rounds
# alternating main (71cd6fe, cudakern-old.test), this tree with
# KQUANT_CUDA_SPEC=off, and this tree; then every k once each.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g
(cd cudakern && timeout 300 $B/cudakern.test -test.v -test.timeout 290s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic|breaths in' /tmp/g/tests.log | head -40
run() { # variant pattern benchtime log
	t=cudakern.test; spec=on
	case $1 in old) t=cudakern-old.test ;; off) spec=off ;; esac
	(cd cudakern && KQUANT_CUDA_SPEC=$spec timeout 120 $B/$t -test.run '^$' -test.bench "$2" -test.benchtime $3) > $4 2>&1
	echo "$1 $4 rc=$? $(el) s"
}
for r in 1 2 3; do
	for v in old off on; do
		run $v 'BenchmarkRunStages/.*/k=256$' 50x /tmp/g/k256-$v-$r.log
	done
done
for v in old off on; do
	run $v 'BenchmarkRunStages' 20x /tmp/g/all-$v.log
done
tar czf $O/c1.tgz -C /tmp/g .
for f in /tmp/g/k256-*.log; do echo "$f: $(grep -E '^BenchmarkRunStages' $f | awk '{print $1, $3}' | tr '\n' ' ')"; done
