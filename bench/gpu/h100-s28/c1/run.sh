#!/bin/sh
# session 28: issue 5 on the H100 host's CPU (16 threads): main (kq-old) against the gaps'
# quartile pricing of the bounds and the probe's fixed cost (kq-new), each on its own fresh
# calibration; groups alternate old/new so both see the same host; each run only while time
# is left. Colours (d = 3) do not probe and are left out.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xzf $R/.gpu/s28/b.tgz -C /tmp/b; S=/tmp/b
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
for b in old new; do mkdir -p $O/cal-$b; KQUANT_CACHE_DIR=$O/cal-$b timeout 120 $S/kq-$b bench --calibrate --dims 8,32,41 --backends cpu > $O/calibrate-$b.txt 2>&1; echo "cal $b rc=$? $(el) s"; done
run() { # run BIN NAME ARGS...
	b=$1; n=$2; shift 2; [ $(el) -lt 530 ] || { echo "$n skipped $(el) s"; return; }
	d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal-$b/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 120 $S/kq-$b bench --backends cpu --max-iter 30 "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
for r in 1 2 3; do
	for b in old new; do run $b d8-kquant-$b-$r --preset fig5 --n 30000 --d 8 -k 16,32 --sigma2 0.001,0.003,0.01,0.03,0.1,1 --repeat 5; done
	for b in old new; do run $b d32-kquant-$b-$r --preset fig5 --n 30000 --d 32 -k 32 --sigma2 0.001,0.01,0.05,1 --repeat 5; done
	[ $r = 3 ] || for b in old new; do run $b d41-kquant-$b-$r --preset table1 --repeat 3; done
done
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
