#!/bin/sh
# Session 34, ninth call: kq_rd_levels' phases timed (RdLoop.phases,
# PhaseClock marks; BenchmarkReducePhases): where kq_rd_finish's 45 µs
# go, after three guesses at it (calls 2, 6, 8). Rebuilds the fatbin, runs
# every cudakern test on it, kquant quantize cpu against cuda (bytes),
# then BenchmarkReducePhases (2 rounds) and, that the marks cost nothing
# where no phases buffer is given, old (67d28dc, its embedded fatbin)
# against new as in call 6. Binaries: .gpu/s34/p.txz; images
# .gpu/s34/imgs; carry [".gpu/s34"]. (The marks are not on main: they
# slowed kq_rd_levels by 3 µs with no buffer given; bench/cuda/
# session34-rd-phases.patch has them.)
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
for r in 1 2; do
	(cd cudakern && KQUANT_FATBIN=$F timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReducePhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g')
done | tee $O/reduce-phases.txt
kq_reduce_ab
