#!/bin/sh
# Session 36, third call (no build): where the host's time goes in a
# default k = 256 run: CPU profiles (pprof) of BenchmarkRunStages, 300
# runs on home and graf1, with the device's plan (default) and with
# KQUANT_CUDA_PLAN=off, brought back for go tool pprof with the binary.
# Binaries: .gpu/s36/p.txz; images .gpu/s36/imgs; carry [".gpu/s36"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s36
cd cudakern
for v in heur off; do
	for img in home.jpg graf1.png; do
		KQUANT_CUDA_PLAN=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 300x -test.cpuprofile $O/cpu-$img-$v.pprof 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done
echo "done $(el) s"
