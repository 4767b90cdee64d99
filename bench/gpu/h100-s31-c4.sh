#!/bin/sh
# Session 31, fourth call: kq_br_shrink reads the utility order by a
# block-wide minimum a centroid, as far as the removals need it (no
# ranking of all kg), and a run removing none takes each centroid's place
# as its index. Rebuilds the fatbin (gzipped into $OUT), runs every
# cudakern test on it, ncu's durations of kq_br_shrink, then
# BenchmarkBreathPhases and BenchmarkRunStages at k = 256, 3 rounds
# alternating this tree's binary on its embedded fatbin (the kernel
# before: "emb") and on the rebuilt one ("new").
# Binaries: .gpu/s31/b.tgz; images .gpu/s31/imgs; carry [".gpu/s31"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s31/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s31/imgs
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > $O/build.txt 2>&1
echo "build rc=$?: $(tail -1 $O/build.txt)"
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic' $O/tests.log | head
(cd cudakern && KQUANT_FATBIN=$F timeout 100 ncu --clock-control none -k regex:kq_br_shrink -c 40 --metrics gpu__time_duration.sum,smsp__inst_executed.sum $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases/graf1' -test.benchtime 2x) > /tmp/g/ncu-shrink.log 2>&1
echo "ncu rc=$?"
for r in 1 2 3; do
	(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$|BenchmarkBreathPhases' -test.benchtime 50x) > /tmp/g/bench-emb-$r.log 2>&1
	(cd cudakern && KQUANT_FATBIN=$F timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$|BenchmarkBreathPhases' -test.benchtime 50x) > /tmp/g/bench-new-$r.log 2>&1
	echo "round $r"
done
tar czf $O/logs.tgz -C /tmp/g .
ls -la $O
