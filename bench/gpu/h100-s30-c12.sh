#!/bin/sh
# Session 30, twelfth call: call 11's fatbin again, brought back this time
# (call 11 left more files in $OUT than come back): the build, then the
# breathing and identity tests on it.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/build.txt 2>&1
echo "build rc=$?: $(tail -1 /tmp/build.txt)"
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
(cd cudakern && KQUANT_FATBIN=$R/cudakern/kernels.fatbin timeout 150 $B/cudakern.test -test.v -test.run 'TestBreathOutChained|TestIdentityRuns|TestLloydSteps|TestProfileAheadRuns' -test.timeout 140s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c identical $O/tests.log) identical"
