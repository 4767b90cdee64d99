#!/bin/sh
# session 23 call 3: issue 5's cases on main (30253ac: the 2-core changes, which leave 4+ threads alone,
# the trend over two passes, which does not), in order of need, each section only while time is left:
# CPU's 16 threads d = 32 and d = 8 twice (--repeat 10), table1 (--repeat 5), images (--repeat 5);
# GPU images (--repeat 10), table1 (--repeat 5), fig5 (--repeat 3); one calibration
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; I=$R/.gpu/s23/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-new bench --calibrate --dims 3,8,32,41 --backends cpu,cuda > $O/calibrate.txt 2>&1
echo "cal rc=$? $(el) s"
run() { # run NAME ARGS...: one bench run on a fresh copy of the calibration, if time is left
	n=$1; shift; [ $(el) -lt 470 ] || { echo "$n skipped $(el) s"; return; }
	d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 150 $S/kq-new bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
IM="$I/smarties.png $I/home.jpg $I/graf1.png $I/starry_night.jpg $I/altai-5120.png"
ALG="--algos lloyd,gemm,bounds,wuhong,kdtree,auto"
for r in 1 2; do for d in 32 8; do
	run d$d-kquant-new-$r --backends cpu --preset fig5 --n 30000 --d $d -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 10 $ALG
done; done
run table1-cpu --backends cpu --preset table1 --repeat 5 --max-iter 30 $ALG
run images-cuda --backends cuda -k 16,64,256 --repeat 10 --max-iter 30 $IM
run images-cpu --backends cpu -k 16,64,256 --repeat 5 --max-iter 30 $IM
run table1-cuda --backends cuda --preset table1 --repeat 5 --max-iter 30
run fig5-cuda --backends cuda --preset fig5 --repeat 3 --max-iter 30
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
