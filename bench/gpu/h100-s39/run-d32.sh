#!/bin/sh
# session 39, second call of issue 5: the binaries of run.sh at d = 32 (n = 30 000,
# k = 32, σ² 0.001–1), old/new alternating, each on its own fresh calibration at
# d = 32, while time is left.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xJf $R/.gpu/s39c/b.txz -C /tmp/b; S=/tmp/b
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
for b in old new; do mkdir -p $O/cal-$b; KQUANT_CACHE_DIR=$O/cal-$b timeout 120 $S/kq-$b bench --calibrate --dims 32 --backends cpu > $O/calibrate-d32-$b.txt 2>&1; echo "cal $b rc=$? $(el) s"; done
run() { # run BIN NAME ARGS...
	b=$1; n=$2; shift 2; [ $(el) -lt 400 ] || { echo "$n skipped $(el) s"; return; }
	d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal-$b/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 150 $S/kq-$b bench --backends cpu --max-iter 30 "$@" > $O/$n.md 2> /dev/null; echo "$n rc=$? $(el) s"
}
for r in 1 2 3 4 5; do
	for b in old new; do run $b d32-kquant-$b-$r --preset fig5 --n 30000 --d 32 -k 32 --sigma2 0.001,0.01,0.1,1 --repeat 3; done
done
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
