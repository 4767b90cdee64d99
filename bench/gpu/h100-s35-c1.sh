#!/bin/sh
# Session 35, first call: the seeding's step with one round trip to L2
# fewer in its apply (every draw's gains of the blocks and groups read
# beside the step's sums) and one fewer in its find (a chunk of at most
# 256 points searched a point at a time, no group sums), and the reduce's
# phase marks in kq_rd_levels_timed (bench/cuda/session34-rd-phases.patch).
# Rebuilds the fatbin, runs every cudakern test on it and kquant quantize
# cpu against cuda (bytes); BenchmarkSeedPhases old (0c1bede, its embedded
# fatbin) against new, 2 rounds; ncu of kq_rd_levels old against new (the
# plain kernel must cost what main's does); BenchmarkReducePhases once.
# Binaries: .gpu/s35/p.txz; images .gpu/s35/imgs; carry [".gpu/s35"].
# (The seeding's changes were slower and were reverted; NOTES round 32.)
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s35
kq_check
for r in 1 2; do
	for v in old new; do
		echo "== $r $v"
		(cd cudakern && KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkSeedPhases' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g')
	done
done | tee $O/seed-phases.txt
echo "seed phases $(el) s"
(
cd cudakern
for v in old new; do
	for img in graf1.png home.jpg; do
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkReduce/$img/32768/fin=7\$" -test.benchtime 3x > /tmp/g/ncu.log 2>&1
		echo "$v $img kq_rd_levels: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
	done
done | tee $O/ncu.txt
echo "ncu $(el) s"
KQUANT_FATBIN=$F timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReducePhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | tee $O/reduce-phases.txt
)
echo "done $(el) s"
