#!/bin/sh
# Session 33, first call: a chained run in one cooperative launch
# (kq_lloyd_run_*: br_shrink in block 0, the first pass, the loop, the
# profile; its grid barrier left zeroed by grid_exit). Rebuilds the
# fatbin (gzipped into $OUT), runs the breathing, batch, profile and
# identity tests on it, then BenchmarkBreathPhases and BenchmarkRunStages
# (k = 256) on home, graf1, altai, 2 rounds alternating 4768f73
# (cudakern-old.test, its embedded fatbin) and this tree.
# Binaries: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
grep -i "error\|spill" /tmp/g/build.txt | head -10
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 170 $B/cudakern.test -test.v -test.timeout 160s -test.run 'TestBreathOutChained|TestIdentityRuns|TestLloydSteps|TestProfileAheadRuns|TestParamsLayout|TestFatbinMatchesSources|TestGridSync|TestReducedOpen') > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic|^    .*_test.go' $O/tests.log | head -20
cd cudakern
for r in 1 2; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		echo "== $r $v $(el) s"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 100 $B/$t -test.run '^$' -test.bench 'BenchmarkBreathPhases|BenchmarkRunStages/.*/k=256$' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done
ls -la $O
