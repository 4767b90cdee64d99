#!/bin/sh
# Session 34, fourth call: why BenchmarkLloydPhases' wall time a batch rose
# on altai's reduced set (465-486 → 607-624 µs in call 3) while block 0's
# cycles a pass fell. The new binary embeds call 3's fatbin (committed).
# ncu's duration of every kernel of the benchmark's altai and graf1 reduced
# cases, old (94616a1) and new, summed by kernel; then the benchmark again,
# 2 rounds alternating. Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs;
# carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
cd cudakern
for v in old new; do
	for img in altai-5120.png graf1.png; do
		timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkLloydPhases/$img/reduced" -test.benchtime 2x > /tmp/ncu-$v-$img.log 2>&1
		echo "== $v $img rc=$?"
		awk '/^  [a-z_0-9]+\(|^  kq_/ {name=$1} /gpu__time_duration.sum/ {v=$NF; u=$(NF-1); if (u=="msecond") v*=1000; if (u=="nsecond") v/=1000; n[name]++; s[name]+=v} END {for (k in n) printf "%-40s %4d %10.1f\n", k, n[k], s[k]}' /tmp/ncu-$v-$img.log | sort -k3 -n -r | head -12
	done
done | tee $O/ncu-kernels.txt
grep -m3 "kq_" /tmp/ncu-new-graf1.png.log > $O/ncu-sample.txt
for r in 1 2; do
	for v in old new; do
		echo "== $r $v"
		timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkLloydPhases/.*/reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | cut -c1-200
	done
done | tee $O/lloyd-phases.txt
