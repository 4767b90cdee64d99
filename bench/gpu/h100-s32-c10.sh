#!/bin/sh
# Session 32, tenth call: Open's weights and Auto's model made beside the
# packing, on goroutines of their own. Every cudakern test, then Go traces
# of 100 default k = 256 runs on graf1, home and altai
# (BenchmarkRunStages), 3 rounds alternating 8589bee (cudakern-old.test)
# and this tree. Binaries: .gpu/s32b/p.txz; images .gpu/s32b/imgs (graf1,
# home, altai); carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
(cd cudakern && timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head -20
for r in 1 2 3; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		for img in graf1.png home.jpg altai-5120.png; do
			(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
	done
	echo "traces $r $(el) s"
done
cp /tmp/g/tests.log $O/
tar czf $O/c10.tgz -C /tmp/g --exclude=tests.log .
ls -la $O
