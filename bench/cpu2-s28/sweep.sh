#!/bin/sh
# session 28: main (/tmp/kq-old) against the change (/tmp/kq-new), each on its own fresh calibration; colours (d = 3) left out: they never probe, and the change is in the probe and the gap rule (6 < d <= 8)
# usage: sweep.sh OUTDIR ROUNDS
set -u
O=$1; R=$2; mkdir -p $O
IM=/work/shared/images
for b in old new; do
  rm -rf /tmp/sw/cal-$b; mkdir -p /tmp/sw/cal-$b
  KQUANT_CACHE_DIR=/tmp/sw/cal-$b /tmp/kq-$b bench --calibrate --backends cpu --dims 8,32,41 > $O/calibrate-$b.txt 2>&1
done
run() { # bin file args...
  b=$1; f=$2; shift 2
  rm -rf /tmp/sw/c; cp -r /tmp/sw/cal-$b /tmp/sw/c
  KQUANT_CACHE_DIR=/tmp/sw/c /tmp/kq-$b bench --backends cpu --max-iter 30 "$@" > $O/$f 2>$O/$f.err
}
for r in $(seq 1 $R); do
  for b in old new; do
    run $b d8-kquant-$b-$r.md --preset fig5 --n 30000 --d 8 -k 16,32 --sigma2 0.001,0.003,0.01,0.03,0.1,1 --repeat 5
    run $b d32-kquant-$b-$r.md --preset fig5 --n 30000 --d 32 -k 32 --sigma2 0.001,0.01,0.05,1 --repeat 5
    run $b d41-kquant-$b-$r.md --preset table1 --repeat 3
    echo "round $r $b done $(date +%T)" >> $O/progress.txt
  done
done
echo ALLDONE >> $O/progress.txt
