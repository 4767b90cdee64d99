#!/bin/sh
# session 39: issue 5 on the H100 host's CPU (16 threads): main (kq-old) against
# the per-point algorithms' passes on a crew of goroutines that wait between
# passes (kq-new; the kd-tree's passes had one already): BenchmarkPass (a
# steady pass of lloyd, bounds, wuhong and gemm at d = 8, n = 30 000) old/new,
# two rounds; each binary's fresh calibration at d = 8; then the d = 8 sweep,
# old/new alternating, each on its own calibration, while time is left.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xJf $R/.gpu/s39c/b.txz -C /tmp/b; S=/tmp/b
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; } > $O/info.txt 2>&1
for r in 1 2; do for b in old new; do echo "== $r $b"; $S/km-$b.test -test.run '^$' -test.bench BenchmarkPass -test.benchtime 300x 2>&1 | grep -E 'ns/op|FAIL'; done; done > $O/pass.txt
echo "pass $(el) s"
for b in old new; do mkdir -p $O/cal-$b; KQUANT_CACHE_DIR=$O/cal-$b timeout 120 $S/kq-$b bench --calibrate --dims 8 --backends cpu > $O/calibrate-$b.txt 2>&1; echo "cal $b rc=$? $(el) s"; done
run() { # run BIN NAME ARGS...
	b=$1; n=$2; shift 2; [ $(el) -lt 480 ] || { echo "$n skipped $(el) s"; return; }
	d=/tmp/c-$n; rm -rf $d; mkdir -p $d; cp $O/cal-$b/calibration.json $d/
	KQUANT_CACHE_DIR=$d timeout 120 $S/kq-$b bench --backends cpu --max-iter 30 "$@" > $O/$n.md 2> $O/$n.err; echo "$n rc=$? $(el) s"
}
for r in 1 2 3 4 5; do
	for b in old new; do run $b d8-kquant-$b-$r --preset fig5 --n 30000 --d 8 -k 16,32 --sigma2 0.001,0.003,0.01,0.03,0.1,1 --repeat 5; done
done
echo "total $(el) s"
cd $O && tar czf $OUT/out.tgz .
