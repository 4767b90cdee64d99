#!/bin/sh
# Session 33, tenth call: round_div from an fp32 estimate corrected by the exact remainder, half_of by the conversion instruction
# (the update's centroids phase: 2350 cycles a pass on the reduced sets at
# the ninth call, three 64-bit division calls a centroid).
# Rebuilds the fatbin (gzipped into $OUT), runs every cudakern test on it,
# then BenchmarkLloydPhases, 2 rounds.
# Binary: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
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
(cd cudakern && KQUANT_FATBIN=$F timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|^--- SKIP|panic' $O/tests.log | head -20
cd cudakern
for r in 1 2; do
	KQUANT_FATBIN=$F timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
done | tee $O/lloyd-phases.txt
ls -la $O
