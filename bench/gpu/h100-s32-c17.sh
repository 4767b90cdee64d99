#!/bin/sh
# Session 32, seventeenth call: after the last read (chain keeps its
# nodes and BenchmarkLaunchCost builds its graph by newChain; planLayout
# and reducedLayout share sampledLayout): the tests of the layout, the
# reduce, the reduced set's open, seeding and whole runs, and
# BenchmarkLaunchCost. Binary: .gpu/s32b/p.txz; images .gpu/s32b/imgs;
# carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
cd cudakern
timeout 200 $B/cudakern.test -test.v -test.run 'Layout|Reduce|StagedOpen|Seeder|IdentityRuns|BreathOutChained|LloydSteps$' > $O/tests.log 2>&1
echo "tests rc=$?: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- (FAIL|PASS|SKIP)|panic' $O/tests.log | head -30
$B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLaunchCost' -test.benchtime 3000x | grep us/call
