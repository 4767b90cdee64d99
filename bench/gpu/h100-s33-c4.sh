#!/bin/sh
# Session 33, fourth call: where a default run's host time goes now that a
# breath is two launches. On e29c3e8 (its embedded fatbin): a CPU profile
# of 300 default k = 256 runs on graf1 (BenchmarkRunStages), a Go trace of
# 100, BenchmarkBreathPhases (50 runs) and BenchmarkLloydPhases (the
# reduced sets' passes, block 0's cycles a phase).
# Binaries: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
cd cudakern
timeout 120 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256$' -test.benchtime 300x -test.cpuprofile $O/cpu-graf1.prof 2>&1 | grep -E 'ns/op|FAIL'
timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256$' -test.benchtime 100x -test.trace $O/trace-graf1.out 2>&1 | grep -E 'ns/op|FAIL'
timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL' | sed 's/  */ /g'
timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkLloydPhases' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL' | sed 's/  */ /g'
ls -la $O
