#!/bin/sh
# Session 34, third call (the second rebuilt the fatbin of a tree whose
# update flags took one barrier and whose kq_rd_finish split its first
# sub-levels by groups of warps: both measured slower, both reverted).
# The tree to commit: the update's centroids by round_div4, the sums' loads
# issued together, every grid_exit kernel on the Backend's one barrier.
# Rebuilds the fatbin (gzipped into $OUT), runs every cudakern test on it,
# kquant quantize --backend cpu against cuda on every image at k = 16 and
# 256 (bytes compared), BenchmarkLloydPhases old and new, then Go traces of
# 100 default k = 256 runs on home, graf1 and altai (BenchmarkRunStages),
# old and new alternating, as many rounds (up to 3) as the call has time
# for, summarised by tracesum (.gpu/s34/ts.xz: each region's median).
# Old: cudakern-old.test, 94616a1 on its embedded fatbin.
# Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
cd cudakern
for r in 1 2; do
	for v in old new; do
		echo "== $r $v"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkLloydPhases/.*/reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done > $O/lloyd-phases.txt
echo "phases done $(el) s"
mkdir -p /tmp/tr; xz -dc $R/.gpu/s34/ts.xz > /tmp/ts; chmod +x /tmp/ts
for r in 1 2 3; do
	[ $(el) -gt 500 ] && break
	for v in old new; do
		for img in home.jpg graf1.png altai-5120.png; do
			KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/$img-$v-$r.out > /dev/null 2>&1 || echo "$img $v $r failed"
			/tmp/ts /tmp/tr/$img-$v-$r.out | awk -v n=$img-$v-$r '$1=="bench.run"||$1=="kmeans.breathe"||$1=="kmeans.seed"||$1=="kmeans.starts"||$1=="kmeans.refine"||$1=="kmeans.finish"||$1=="cudakern.reduce" {print n, $1, $3}' >> $O/medians.txt
			rm -f /tmp/tr/$img-$v-$r.out
		done
	done
	echo "round $r done $(el) s"
done
cat $O/medians.txt | awk '$2=="bench.run"||$2=="kmeans.breathe"'
ls -la $O
