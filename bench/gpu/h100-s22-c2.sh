#!/bin/sh
# session 22 call 2: Auto's probe beside its first pass (new) against main d6de512 (old), 16 threads:
# d = 32 (3 rounds alternating, --repeat 10), table1 (d = 41), and CPU profiles of Auto and the kd-tree
# on smarties and home at k = 256 (Auto's passes 17-19 % behind the tree's in call 1)
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; ln -s $R/.gpu/s23/imgs /tmp/b/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-old bench --calibrate --dims 3,32,41 --backends cpu > $O/calibrate.txt 2>&1
echo "cal rc=$? $(el) s"
run() { # run BIN NAME ARGS...: one bench run on a fresh copy of the calibration
	b=$1; n=$2; shift 2; d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 150 $S/$b bench "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
D32="--backends cpu --preset fig5 --n 30000 --d 32 -k 32 --sigma2 0.001,0.01,0.05,1 --max-iter 30 --repeat 10 --algos lloyd,gemm,bounds,wuhong,kdtree,auto"
for r in 1 2 3; do
	if [ $r -eq 2 ]; then run kq-new d32-kquant-new-$r $D32; run kq-old d32-kquant-old-$r $D32
	else run kq-old d32-kquant-old-$r $D32; run kq-new d32-kquant-new-$r $D32; fi
done
python3 $R/bench/gpu/autocmp.py $O > $O/summary.txt 2>&1
I=$S/imgs
for b in old new; do
	run kq-$b prof-auto-$b --backends cpu -k 256 --repeat 20 --max-iter 30 --algos auto --cpuprofile $O/prof-auto-$b.prof $I/smarties.png $I/home.jpg
done
run kq-old prof-kdtree --backends cpu -k 256 --repeat 20 --max-iter 30 --algos kdtree --cpuprofile $O/prof-kdtree.prof $I/smarties.png $I/home.jpg
for b in old new; do
	[ $(el) -lt 480 ] && run kq-$b table1-$b --backends cpu --preset table1 --repeat 3 --max-iter 30 --algos lloyd,gemm,bounds,wuhong,kdtree,auto
done
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
