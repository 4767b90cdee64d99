#!/bin/sh
# Session 35, fifth call: the session's final tree (main, the reduce's
# phase marks in kq_rd_levels_timed, call 2's fatbin embedded), checked:
# every cudakern test and kquant quantize cpu against cuda (bytes); then
# BenchmarkReducePhases once (the marks, from the embedded fatbin).
# Binaries: .gpu/s35/p.txz; images .gpu/s35/imgs; carry [".gpu/s35"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s35
kq_verify
(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReducePhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | tee $O/reduce-phases.txt)
echo "done $(el) s"
