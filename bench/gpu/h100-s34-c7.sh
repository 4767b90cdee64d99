#!/bin/sh
# Session 34, seventh call: the session's end (1928d12, its embedded
# fatbin) against its start (94616a1, cudakern-old.test): Go traces of 100
# default k = 256 runs on home, graf1 and altai (BenchmarkRunStages), 3
# rounds alternating, summarised by tracesum (.gpu/s34/ts.xz), then
# BenchmarkBreathPhases, 2 rounds. Binaries: .gpu/s34/p.txz; images
# .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
cd cudakern
mkdir -p /tmp/tr; xz -dc $R/.gpu/s34/ts.xz > /tmp/ts; chmod +x /tmp/ts
for r in 1 2 3; do
	for v in old new; do
		for img in home.jpg graf1.png altai-5120.png; do
			timeout 60 $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $v $r failed"
			/tmp/ts /tmp/tr/t.out | awk -v n=$img-$v-$r '$1=="bench.run"||$1=="kmeans.breathe"||$1=="kmeans.seed"||$1=="kmeans.starts"||$1=="kmeans.refine"||$1=="kmeans.finish"||$1=="cudakern.reduce" {print n, $1, $3}' >> $O/medians.txt
		done
	done
	echo "round $r done $(el) s"
done
awk '$2=="bench.run"||$2=="kmeans.breathe"||$2=="cudakern.reduce"' $O/medians.txt
for r in 1 2; do
	for v in old new; do
		echo "== $r $v"
		timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done | tee $O/breath-phases.txt
