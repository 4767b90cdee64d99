#!/bin/sh
# Session 31, second call: where a default run's open of the reduced set
# goes (Go traces of 100 default k = 256 runs on home, graf1 and altai,
# 2 rounds, with the new cudakern.extent, .stage, .auto, .weights and
# .reduce regions), and kq_br_shrink's own duration (ncu, graf1's
# breaths: the grown run's removing none, the breath out's removing md).
# Binaries: .gpu/s31/b.tgz; images .gpu/s31/imgs; carry [".gpu/s31"].
set -u
TAG=${TAG:-c2}
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s31/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s31/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
for r in 1 2; do
	for img in home.jpg graf1.png altai-5120.png; do
		(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$r.out) > /tmp/g/trace-$img-$r.log 2>&1 || echo "$img $r failed"
	done
	echo "traces $r $(el) s"
done
(cd cudakern && timeout 200 ncu --clock-control none -k regex:kq_br_shrink -c 60 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.max,smsp__average_warp_latency_per_inst_issued.ratio $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases/graf1' -test.benchtime 2x) > /tmp/g/ncu-shrink.log 2>&1
echo "ncu rc=$? $(el) s"
cp /tmp/g/ncu-shrink.log $O/
tar czf /tmp/$TAG.tgz -C /tmp/g .
split -b 15m /tmp/$TAG.tgz $O/$TAG.tgz.
ls -la $O
