#!/bin/sh
# Session 32, eighth call: packColours four points a step against one
# (BenchmarkPackColours, graf1, on one thread and on all 16), and remove
# with its distances once against twice (BenchmarkBreathRemove), 3 rounds
# alternating. Binaries: .gpu/s32b/p.txz; graf1 in .gpu/s32b/imgs;
# carry [".gpu/s32b"].
set -u
R=$PWD; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
cd cudakern
for r in 1 2 3; do
	for p in 1 16; do
		for v in rolled unrolled; do
			printf "%s procs=%s %s " $r $p $v; GOMAXPROCS=$p $B/ck-$v.test -test.run '^$' -test.bench 'BenchmarkPackColours' -test.benchtime 300x | grep ns/op
		done
	done
	for v in old new; do
		printf "%s remove %s " $r $v; $B/km-$v.test -test.run '^$' -test.bench 'BenchmarkBreathRemove' -test.benchtime 20000x | grep ns/op
	done
done
