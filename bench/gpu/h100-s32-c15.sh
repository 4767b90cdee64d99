#!/bin/sh
# Session 32, fifteenth call: the session's end (d01d643) against its
# start (5849b35): Go traces of 100 default k = 256 runs on home, graf1
# and altai (BenchmarkRunStages), 3 rounds alternating, each binary on
# its embedded fatbin. Binaries: .gpu/s32b/p.txz; images .gpu/s32b/imgs;
# carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
rm -rf /tmp/g; mkdir -p /tmp/g
for r in 1 2 3; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
	done
done
tar czf $O/c15.tgz -C /tmp/g .
ls -la $O
