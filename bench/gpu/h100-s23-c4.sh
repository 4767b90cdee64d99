#!/bin/sh
# session 23 call 4: the second run of call 3's single-run cases (a miss counts where both runs miss):
# CPU table1 (--repeat 5) and images (--repeat 5); GPU images (--repeat 10), table1 (--repeat 5),
# fig5 (--repeat 3); one calibration. Same binary as call 3.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; I=$R/.gpu/s23/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-new bench --calibrate --dims 3,8,32,41 --backends cpu,cuda > $O/calibrate.txt 2>&1
echo "cal rc=$? $(el) s"
run() { n=$1; shift; d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 150 $S/kq-new bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"; }
IM="$I/smarties.png $I/home.jpg $I/graf1.png $I/starry_night.jpg $I/altai-5120.png"
ALG="--algos lloyd,gemm,bounds,wuhong,kdtree,auto"
run images-cpu-2 --backends cpu -k 16,64,256 --repeat 5 --max-iter 30 $IM
run table1-cpu-2 --backends cpu --preset table1 --repeat 5 --max-iter 30 $ALG
run images-cuda-2 --backends cuda -k 16,64,256 --repeat 10 --max-iter 30 $IM
run table1-cuda-2 --backends cuda --preset table1 --repeat 5 --max-iter 30
run fig5-cuda-2 --backends cuda --preset fig5 --repeat 3 --max-iter 30
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
