#!/bin/sh
# Session 37, second call (no build; call 1's binaries): the breaths'
# device phases with breathing's Assigns deferred (default) and with
# KQUANT_CUDA_DEFER=off, 2 rounds alternating; then CPU profiles (pprof)
# of 300 default k = 256 runs on home and altai with them deferred, for
# where the host's time goes now.
# Binaries: .gpu/s37/p.txz; images .gpu/s37/imgs; carry [".gpu/s37"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s37
cd cudakern
for r in 1 2; do
	for v in on off; do
		echo "== $r $v"
		KQUANT_CUDA_DEFER=$v timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done > $O/breath-phases.txt 2>&1
cat $O/breath-phases.txt
for img in home.jpg altai-5120.png; do
	timeout 60 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 300x -test.cpuprofile $O/cpu-$img.pprof 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
done
echo "done $(el) s"
