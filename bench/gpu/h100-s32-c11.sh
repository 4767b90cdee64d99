#!/bin/sh
# Session 32, eleventh call: every cudakern test on the tree of call 10
# (its own call lacked most images). Binaries: .gpu/s32b/p.txz; images
# .gpu/s32b/imgs; carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
(cd cudakern && timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic' $O/tests.log | head -20
