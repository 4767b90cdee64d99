#!/bin/sh
# Session 33, seventh call: the session's end (the tree of call 6, its
# rebuilt fatbin, now committed) against its start (4768f73,
# cudakern-start.test on its embedded fatbin): Go traces of 100 default
# k = 256 runs on home, graf1 and altai (BenchmarkRunStages), 3 rounds
# alternating, for medians. Binaries: .gpu/s33/p.txz; images
# .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
mkdir -p $O/tr
cd cudakern
for r in 1 2 3; do
	for v in start end; do
		t=cudakern.test; [ $v = start ] && t=cudakern-start.test
		for img in home.jpg graf1.png altai-5120.png; do
			KQUANT_FATBIN=$([ $v = end ] && echo $R/cudakern/kernels.fatbin) timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace $O/tr/$img-$v-$r.out > /dev/null 2>&1 || echo "$img $v $r failed"
		done
	done
done
ls $O/tr | wc -l
