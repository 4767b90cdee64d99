#!/bin/sh
# Session 33, fifth call: kq_rd_finish moves weights, not indices (a
# leaf's sums from shared memory), and round_div takes the quotient's floor
# in fp64 where s and w are below 2^52. Rebuilds the fatbin (gzipped into
# $OUT), runs the identity, batch, reduce and breathing tests on it, ncu's
# durations of kq_rd_levels for 3 reductions of graf1 into 32768 parts
# (old and new), then BenchmarkLloydPhases on the reduced sets,
# BenchmarkReduce (fin = 7) and BenchmarkBreathPhases, 2 rounds
# alternating e29c3e8 (cudakern-old.test, its embedded fatbin) and this tree.
# Binaries: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
grep -i "error" /tmp/g/build.txt | head -10
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 150 $B/cudakern.test -test.v -test.timeout 140s -test.run 'TestReduceOnDevice|TestReduces|TestReducedOpen|TestReducedSets|TestFatbinMatchesSources|TestIdentityRuns|TestBreathOutChained|TestLloydSteps|TestProfileAheadRuns|TestEmptyClusters') > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic' $O/tests.log | head -20
cd cudakern
for v in old new; do
	t=cudakern.test; [ $v = old ] && t=cudakern-old.test
	KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $B/$t -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > /tmp/g/ncu-$v.log 2>&1
	echo "ncu $v rc=$? $(grep gpu__time_duration /tmp/g/ncu-$v.log | awk '{print $NF}' | tr '\n' ' ')"
done
echo "== benches $(el) s"
for r in 1 2; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		echo "== $r $v $(el) s"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkLloydPhases/.*/reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkReduce/.*/32768/fin=7$' -test.benchtime 200x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done
ls -la $O
