#!/bin/sh
# session 23 call 5: smarties and home at k = 256 on the CPU's 16 threads, kdtree and auto only,
# --repeat 30, twice (calls 3 and 4 had Auto 1.11-1.22 times the kd-tree there, at --repeat 5,
# Auto on the kd-tree throughout); one calibration. Same binary as call 3.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O/cal /tmp/b; tar xzf $R/.gpu/s23/b.tgz -C /tmp/b; S=/tmp/b; I=$R/.gpu/s23/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
KQUANT_CACHE_DIR=$O/cal timeout 120 $S/kq-new bench --calibrate --dims 3 --backends cpu > $O/calibrate.txt 2>&1
for r in 1 2; do
	d=/tmp/c-$r; rm -rf $d; mkdir -p $d; cp $O/cal/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 200 $S/kq-new bench --backends cpu -k 256 --repeat 30 --max-iter 30 --algos kdtree,auto $I/smarties.png $I/home.jpg > $O/k256-$r.md 2> $O/k256-$r.err
	echo "run $r rc=$? $(el) s"
done
cd $O && tar czf $OUT/out.tgz .
