#!/bin/sh
# Session 32, fourth call: the host's cost of each driver call a breath's
# launch makes (BenchmarkLaunchCost), and TestBreathOutChained (the
# breath after next) on the fatbin of call 2.
# Binaries: .gpu/s32/b.tgz; images .gpu/s32/imgs; carry [".gpu/s32"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s32/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32/imgs KQUANT_FATBIN=$R/cudakern/kernels.fatbin
(cd cudakern && timeout 120 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLaunchCost' -test.benchtime 3000x -test.count 2) > $O/launch.log 2>&1
echo "launch rc=$?"; grep -E "us/call|FAIL|Error" $O/launch.log
(cd cudakern && timeout 120 $B/cudakern.test -test.run 'TestBreathOutChained' -test.v) > $O/chained.log 2>&1
echo "chained rc=$?"; grep -E "^(---|ok|FAIL)|predicted$|predicted\)$" $O/chained.log | tail -12
