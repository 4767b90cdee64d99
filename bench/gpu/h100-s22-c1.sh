#!/bin/sh
# session 22 call 1: issue 5 measured steadier on main (d6de512): --repeat 15, 3 runs a dimension, one calibration;
# images on the CPU's 16 threads and on the GPU (--repeat 5)
set -u
R=$PWD; S=$R/.gpu/s23; O=/tmp/o; rm -rf $O; mkdir -p $O/cal
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; nvidia-smi -L; } > $O/info.txt 2>&1
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq bench --calibrate --dims 3,8,32 --backends cpu,cuda > $O/calibrate.txt 2>&1
echo "cal rc=$? $(el) s"
run() { # run NAME ARGS...: one bench run on a fresh copy of the calibration
	n=$1; shift; d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 150 $S/kq bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
for r in 1 2 3; do
	run d8-kquant-new-$r --backends cpu --preset fig5 --n 30000 --d 8 -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 15 --algos lloyd,gemm,bounds,wuhong,kdtree,auto
	run d32-kquant-new-$r --backends cpu --preset fig5 --n 30000 --d 32 -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 15 --algos lloyd,gemm,bounds,wuhong,kdtree,auto
	[ $(el) -gt 330 ] && break
done
I=$S/imgs
run images-cpu --backends cpu -k 16,64,256 --repeat 5 --max-iter 30 $I/smarties.png $I/home.jpg $I/graf1.png $I/starry_night.jpg $I/altai-5120.png
[ $(el) -lt 500 ] && run images-cuda --backends cuda -k 16,64,256 --repeat 5 --max-iter 30 $I/smarties.png $I/home.jpg $I/graf1.png $I/starry_night.jpg $I/altai-5120.png
python3 $R/bench/gpu/autocmp.py $O > $O/summary.txt 2>&1
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
