#!/bin/sh
# Session 30, ninth call (the final tree: startNext, specRecs a variable):
# every cudakern test, then BenchmarkRunStages, 2 rounds alternating main
# (71cd6fe, cudakern-old.test) and this tree.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
(cd cudakern && timeout 260 $B/cudakern.test -test.v -test.timeout 250s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic|specRecs' $O/tests.log | head
for r in 1 2; do
	for t in cudakern-old.test cudakern.test; do
		(cd cudakern && timeout 120 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 20x) > $O/stages-$t-$r.log 2>&1
		echo "$t $r rc=$?"
	done
done
