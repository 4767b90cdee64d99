#!/bin/sh
# Session 30, fourth call: CPU profiles of 300 default graf1 k = 256 runs
# (BenchmarkRunStages), this tree with KQUANT_CUDA_SPEC=off and on: where
# the host's time a breath goes. The thirteenth call (the final tree) ran
# it with VARIANTS=on.
# Binaries: .gpu/s30/b.tgz; images .gpu/s30/imgs; carry [".gpu/s30"].
set -u
VARIANTS=${VARIANTS:-off on}
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s30/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s30/imgs
for v in $VARIANTS; do
	(cd cudakern && KQUANT_CUDA_SPEC=$v timeout 100 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256$' -test.benchtime 300x -test.cpuprofile $O/cpu-$v.prof) > $O/cpu-$v.log 2>&1
	echo "$v rc=$?"; grep -E '^Benchmark' $O/cpu-$v.log | awk '{print $1, $3}'
done
