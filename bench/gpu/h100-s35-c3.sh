#!/bin/sh
# Session 35, third call (no build: call 2's fatbin, now in the tree and
# embedded): br_shrink reading a breath's grown centroids from the
# page-locked read-ahead (no upload before the grown run). Every cudakern
# test and kquant quantize cpu against cuda; BenchmarkBreathPhases new,
# new with KQUANT_CUDA_SRC=copy (the upload, as before) and old (0c1bede
# on its embedded fatbin), 2 rounds; Go traces of 100 default k = 256
# runs, old against new, 3 rounds alternating (every region's median by
# tracesum); BenchmarkSeedPhases on the reduced sets.
# Binaries: .gpu/s35/p.txz; images .gpu/s35/imgs; carry [".gpu/s35"].
# (Reading the centroids from page-locked memory, and KQUANT_CUDA_SRC, were
# that call's binary only: no measurable gain, reverted; NOTES round 32.)
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s35
kq_verify
cd cudakern
kq_tracesum .gpu/s35
for r in 1 2; do
	for v in new copy old; do
		echo "== $r $v"
		b=$(kq_bin new); [ $v = old ] && b=$(kq_bin old)
		KQUANT_CUDA_SRC=$([ $v = copy ] && echo copy) timeout 40 $b -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done > $O/breath-phases.txt 2>&1
echo "breath phases $(el) s"
for r in 1 2 3; do
	for v in old new; do
		for img in home.jpg graf1.png altai-5120.png; do
			timeout 40 $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $v $r failed"
			/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$v-$r /" >> $O/regions.txt
		done
	done
	echo "round $r $(el) s"
done
awk '$2=="bench.run"||$2=="kmeans.breathe"' $O/regions.txt | sort
timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkSeedPhases//reduced' -test.benchtime 20x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | tee $O/seed-phases.txt
echo "done $(el) s"
