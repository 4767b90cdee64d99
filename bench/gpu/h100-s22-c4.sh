#!/bin/sh
# session 22 call 4: every benchmark case of issue 5 on 0776449 (the probe beside the first pass, --repeat rotating):
# CPU's 16 threads: d = 8 and 32 twice (--repeat 15), images (--repeat 10), table1 (--repeat 3);
# GPU: images (--repeat 15), fig5 (--repeat 3), table1 (--repeat 5); one calibration
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
ALG="--algos lloyd,gemm,bounds,wuhong,kdtree,auto"
run images-cuda --backends cuda -k 16,64,256 --repeat 15 --max-iter 30 $IM
for r in 1 2; do for d in 8 32; do
	run d$d-kquant-new-$r --backends cpu --preset fig5 --n 30000 --d $d -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 15 $ALG
done; done
python3 $R/bench/gpu/autocmp.py $O > $O/summary.txt 2>&1
run images-cpu --backends cpu -k 16,64,256 --repeat 10 --max-iter 30 $IM
run fig5-cuda --backends cuda --preset fig5 --repeat 3 --max-iter 30
run table1-cuda --backends cuda --preset table1 --repeat 5 --max-iter 30
[ $(el) -lt 500 ] && run table1-cpu --backends cpu --preset table1 --repeat 3 --max-iter 30 $ALG
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
