#!/bin/sh
# Session 30, eleventh call: kq_br_shrink zeroes its run's buffers itself
# (no memsets) and reads the centroids from shared memory. Rebuilds the
# fatbin (gzipped into $OUT: 18 MB), runs every cudakern test on it, then
# BenchmarkBreathPhases and BenchmarkRunStages at k = 256, 3 rounds
# alternating c22255c (cudakern-old.test, its own fatbin) and this tree.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > $O/build.txt 2>&1
echo "build rc=$?: $(tail -1 $O/build.txt)"
cp /tmp/build/build.log $O/ 2>/dev/null
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic' $O/tests.log | head
for r in 1 2 3; do
	(cd cudakern && timeout 60 $B/cudakern-old.test -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$|BenchmarkBreathPhases' -test.benchtime 50x) > $O/bench-old-$r.log 2>&1
	(cd cudakern && KQUANT_FATBIN=$F timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$|BenchmarkBreathPhases' -test.benchtime 50x) > $O/bench-new-$r.log 2>&1
	echo "round $r"
done
