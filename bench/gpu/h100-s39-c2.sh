#!/bin/sh
# Session 39, second call (the committed fatbin, no build): BenchmarkSeedChunk
# on the full and the reduced sets (chunks of 256 to 1024 points a block),
# then Go traces of 100 default k = 256 runs, main (128 streamed k-means++
# steps a call, cudakern.test) against 256 a call (cudakern-b256.test),
# 3 rounds alternating.
# Binaries: .gpu/s39b/p.txz; images .gpu/s39b/imgs; carry [".gpu/s39b"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s39b
cd cudakern
for r in 1 2; do
	timeout 120 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkSeedChunk' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
done > $O/seed-chunk.txt
echo "chunks $(el) s"; cat $O/seed-chunk.txt
kq_tracesum .gpu/s39b
for r in 1 2 3; do
	for v in 128 256; do
		bin=$B/cudakern.test; [ $v = 256 ] && bin=$B/cudakern-b256.test
		for img in home.jpg graf1.png altai-5120.png; do
			timeout 40 $bin -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $v $r failed"
			/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$v-$r /" >> $O/regions.txt
		done
	done
	echo "round $r $(el) s"
done
awk '$2=="bench.run"||$2=="kmeans.seed"' $O/regions.txt | sort
echo "done $(el) s"
