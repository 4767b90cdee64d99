#!/bin/sh
# Session 33, eighth call: the session's end (the tree of call 6, its
# rebuilt fatbin, now committed) against its start (4768f73,
# cudakern-start.test on its embedded fatbin): Go traces of 100 default
# k = 256 runs on home, graf1 and altai (BenchmarkRunStages), 3 rounds
# alternating, summarised there by tracesum (.gpu/s33/ts.xz: each region's median) since 18 traces do not come back. Binaries: .gpu/s33/p.txz; images
# .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s33/imgs
mkdir -p $O/tr; xz -dc $R/.gpu/s33/ts.xz > /tmp/ts; chmod +x /tmp/ts
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
for f in $O/tr/*.out; do
	n=$(basename $f .out)
	/tmp/ts $f | awk -v n=$n '$1=="bench.run"||$1=="kmeans.breathe"||$1=="kmeans.reduce"||$1=="kmeans.seed"||$1=="kmeans.starts"||$1=="kmeans.refine"||$1=="kmeans.finish"||$1=="cudakern.reduce"||$1=="kmeans.open-full" {print n, $1, $3}'
done > $O/medians.txt
rm -rf $O/tr
cat $O/medians.txt
