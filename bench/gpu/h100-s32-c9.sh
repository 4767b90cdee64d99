#!/bin/sh
# Session 32, ninth call: packColours four points a step against one in
# whole runs: Go traces of 100 default k = 256 runs on graf1, home and
# altai (BenchmarkRunStages), 3 rounds alternating HEAD (8589bee) and
# HEAD with 0f48d4e's params.go. Binaries: .gpu/s32b/p.txz; images
# .gpu/s32b/imgs; carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
rm -rf /tmp/g; mkdir -p /tmp/g
for r in 1 2 3; do
	for v in rolled unrolled; do
		for img in graf1.png home.jpg altai-5120.png; do
			(cd cudakern && timeout 60 $B/ck-$v.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
	done
done
tar czf $O/c9.tgz -C /tmp/g .
ls -la $O
