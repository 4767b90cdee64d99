#!/bin/sh
# session 22 call 5: Auto's kd-tree passes against the kdtree variant's on smarties and home at k = 256
# (16 threads, --repeat 30), as is and with GOGC=off; fig5 on the GPU at k = 32, σ² = 0.001 (--repeat 7)
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; I=$R/.gpu/s23/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-new bench --calibrate --dims 3,32 --backends cpu,cuda > $O/calibrate.txt 2>&1
run() { n=$1; shift; d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 200 $S/kq-new bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"; }
for r in 1 2; do
run small-$r --backends cpu -k 256 --repeat 30 --max-iter 30 --algos kdtree,auto $I/smarties.png $I/home.jpg
GOGC=off run small-gcoff-$r --backends cpu -k 256 --repeat 30 --max-iter 30 --algos kdtree,auto $I/smarties.png $I/home.jpg
done
run fig5-cuda --backends cuda --preset fig5 -k 32 --sigma2 0.001,0.1 --repeat 7 --max-iter 30
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
