#!/bin/sh
# Session 39, first call: kq_pp_steps with fewer round trips a step (every
# warp takes the last step's choice, scans the chunks' totals and makes the
# draws itself; a draw's point found by one read of its chunk's D, not its
# group sums then its group; the chunks' gains of every draw read beside
# the choice). Rebuild the fatbin, the seeding's tests, every cudakern
# test, BenchmarkSeedPhases old against new (2 rounds), Go traces of 100
# default k = 256 runs old against new (3 rounds alternating), and kquant
# quantize cpu against cuda.
# Binaries: .gpu/s39/p.txz (cudakern.test of the tree, cudakern-old.test of
# main, kquant); images .gpu/s39/imgs; carry [".gpu/s39"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s39
kq_build
(cd cudakern && KQUANT_FATBIN=$F timeout 100 $B/cudakern.test -test.v -test.run 'TestDevicePCG|TestSeeder' -test.timeout 90s) > $O/seed-tests.log 2>&1
echo "seed tests rc=$? $(el) s"; grep -E '^--- |^(ok|FAIL|PASS)|panic' $O/seed-tests.log | head -20
kq_tests
cd cudakern
for r in 1 2; do for v in old new; do
	echo "== $r $v"
	KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkSeedPhases' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
done; done > $O/seed-phases.txt
cat $O/seed-phases.txt | cut -c1-300
kq_tracesum .gpu/s39
for r in 1 2 3; do
	for v in old new; do
		for img in home.jpg graf1.png altai-5120.png; do
			KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 40 $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $v $r failed"
			/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$v-$r /" >> $O/regions.txt
		done
	done
	echo "round $r $(el) s"
done
awk '$2=="bench.run"||$2=="kmeans.seed"||$2=="kmeans.starts"' $O/regions.txt | sort
cd $R
kq_e2e
echo "done $(el) s"
