#!/bin/sh
# Session 34, first call: the update's centroids without branches (round_div4:
# one reciprocal a centroid, one correction step by selects), the sums' loads
# issued together, the update's three block-wide flags in one barrier;
# kq_rd_finish's first three sub-levels split by groups of warps; every
# grid_exit kernel on one Backend-wide barrier (the Lloyd loops and the
# seeding's steps too, so no memset before their launches).
# Rebuilds the fatbin (gzipped into $OUT), runs every cudakern test on it,
# kquant quantize --backend cpu against cuda on every image at k = 16 and
# 256 (bytes compared), ncu's durations of kq_rd_levels (graf1 into 32768
# parts, 3 reductions) old and new, then BenchmarkLloydPhases old and new,
# 2 rounds alternating (old: cudakern-old.test, 94616a1 on its embedded
# fatbin). Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
head -5 /tmp/q/err
cd cudakern
for v in old new; do
	KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > /tmp/g/ncu-$v.log 2>&1
	echo "ncu $v rc=$? kq_rd_levels: $(grep gpu__time_duration /tmp/g/ncu-$v.log | awk '{print $NF}' | tr '\n' ' ')"
done | tee $O/ncu.txt
for r in 1 2; do
	for v in old new; do
		echo "== $r $v $(el) s"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkLloydPhases' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done | tee $O/lloyd-phases.txt
ls -la $O
