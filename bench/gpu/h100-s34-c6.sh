#!/bin/sh
# Session 34, sixth call: kq_rd_finish past its third sub-level a subtree a
# warp, depth first (no block barrier a sub-level, no walk of the heap from
# the root a node). Rebuilds the fatbin, runs every cudakern test on it,
# kquant quantize cpu against cuda (bytes), then old (4b088eb, main before
# it, its embedded fatbin) against new: ncu's durations of kq_rd_levels and,
# with KQUANT_CUDA_REDUCE=launch, of kq_rd_finish alone (graf1 and home into
# 32768 parts, 3 reductions each), and BenchmarkReduce, 2 rounds.
# Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
cd cudakern
for v in old new; do
	for img in graf1.png home.jpg; do
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkReduce/$img/32768/fin=7\$" -test.benchtime 3x > /tmp/g/ncu.log 2>&1
		echo "$v $img kq_rd_levels: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
		KQUANT_CUDA_REDUCE=launch KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_finish --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkReduce/$img/32768/fin=7\$" -test.benchtime 3x > /tmp/g/ncu.log 2>&1
		echo "$v $img kq_rd_finish: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
	done
done | tee $O/ncu.txt
for r in 1 2; do
	for v in old new; do
		echo "== $r $v"
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkReduce/.*/32768/fin=7$' -test.benchtime 100x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done | tee $O/reduce.txt
