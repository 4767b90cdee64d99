#!/bin/sh
# session 22 call 3: the probe beside the first pass (7a60614) on every benchmark case of issue 5:
# images on 16 CPU threads (--repeat 10) and on the GPU (--repeat 15, Auto last as ever, then first),
# d = 8 twice (--repeat 15), fig5 and table1 on the GPU
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; I=$R/.gpu/s23/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-new bench --calibrate --dims 3,8,32,41 --backends cpu,cuda > $O/calibrate.txt 2>&1
echo "cal rc=$? $(el) s"
run() { # run NAME ARGS...: one bench run on a fresh copy of the calibration
	n=$1; shift; d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 200 $S/kq-new bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
IM="$I/smarties.png $I/home.jpg $I/graf1.png $I/starry_night.jpg $I/altai-5120.png"
run images-cuda --backends cuda -k 16,64,256 --repeat 15 --max-iter 30 $IM
run images-cuda-autofirst --backends cuda -k 16,64,256 --repeat 15 --max-iter 30 --algos auto,lloyd,gemm,bounds,wuhong $IM
for r in 1 2; do
	run d8-kquant-new-$r --backends cpu --preset fig5 --n 30000 --d 8 -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 15 --algos lloyd,gemm,bounds,wuhong,kdtree,auto
done
run images-cpu --backends cpu -k 16,64,256 --repeat 10 --max-iter 30 $IM
python3 $R/bench/gpu/autocmp.py $O > $O/summary.txt 2>&1
[ $(el) -lt 380 ] && run fig5-cuda --backends cuda --preset fig5 --repeat 3 --max-iter 30
[ $(el) -lt 480 ] && run table1-cuda --backends cuda --preset table1 --repeat 5 --max-iter 30
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
