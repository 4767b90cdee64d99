#!/bin/sh
# session 29: issue 5 on the H100 host's CPU (16 threads), d = 8 only (the change
# is confined to it): main (kq-old) against no probe where even free tree passes at the
# fixed cost cannot repay a typical build (kq-new), each on its own fresh calibration;
# old/new alternate so both see the same host; each run only while time is left.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xzf $R/.gpu/s29b/b.tgz -C /tmp/b; S=/tmp/b
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
for b in old new; do mkdir -p $O/cal-$b; KQUANT_CACHE_DIR=$O/cal-$b timeout 120 $S/kq-$b bench --calibrate --dims 8 --backends cpu > $O/calibrate-$b.txt 2>&1; echo "cal $b rc=$? $(el) s"; done
run() { # run BIN NAME ARGS...
	b=$1; n=$2; shift 2; [ $(el) -lt 500 ] || { echo "$n skipped $(el) s"; return; }
	d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal-$b/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 120 $S/kq-$b bench --backends cpu --max-iter 30 "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
for r in 1 2 3 4 5; do
	for b in old new; do run $b d8-kquant-$b-$r --preset fig5 --n 30000 --d 8 -k 16,32 --sigma2 0.001,0.003,0.01,0.03,0.1,1 --repeat 5; done
done
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
