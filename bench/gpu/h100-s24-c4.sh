#!/bin/sh
# Session 24, fourth call (the fatbin of c68af40): breathing's orders by
# byValue (cudakern.test, this tree) against sort.SliceStable (the first
# call's binary, cudakern-c1.test, with the same fatbin), 5 rounds
# alternating of the default runs' stages and a Go trace of 100 graf1 k =
# 256 runs each; then kquant quantize end to end, --backend auto against
# --backend cpu, on every image at k = 16 and 256, 3 rounds alternating
# (process wall time; e2e.py).
# Binaries: cudakern.test, cudakern-c1.test and kq (this tree's CLI) in .gpu/s24/b.tgz.
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s24/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s24/imgs
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/g4
for r in 1 2 3 4 5; do
	for v in c1 new; do
		t=cudakern.test; [ $v = c1 ] && t=cudakern-c1.test
		(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 20x) > /tmp/g4/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
for v in c1 new; do
	t=cudakern.test; [ $v = c1 ] && t=cudakern-c1.test
	(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 100x -test.trace /tmp/g4/trace-$v.out) > /tmp/g4/trace-$v.log 2>&1
	echo "trace $v rc=$? $(el) s"
done
unset KQUANT_FATBIN
python3 bench/gpu/e2e.py $B/kq $KQUANT_IMAGES > /tmp/g4/e2e.txt 2>&1
echo "e2e rc=$? $(el) s"
tail -22 /tmp/g4/e2e.txt
tar czf $O/c4.tgz -C /tmp/g4 .
