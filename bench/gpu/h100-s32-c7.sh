#!/bin/sh
# Session 32, seventh call: the session's tree (HEAD: the reduced set
# opened on the device, remove's distances once, packColours four points
# a step) against its start (5849b35, cudakern-old.test). Every cudakern
# test; kquant quantize with --backend cpu and cuda on every image at
# k = 16 and 256, bytes compared; Go traces of 100 default k = 256 runs
# on home, graf1 and altai (BenchmarkRunStages), 3 rounds alternating;
# and, where nsys is there, the device's timeline of 20 graf1 runs.
# Binaries: .gpu/s32/b.txz; images .gpu/s32/imgs; carry [".gpu/s32"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32/b.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g /tmp/q
echo "nsys: $(which nsys) ncu: $(which ncu)"
(cd cudakern && timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > /tmp/g/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' /tmp/g/tests.log) pass, $(grep -c '^--- FAIL' /tmp/g/tests.log) fail, $(grep -c '^--- SKIP' /tmp/g/tests.log) skip, $(grep -c identical /tmp/g/tests.log) identical"
grep -E '^--- FAIL|panic' /tmp/g/tests.log | head -20
same=0; diff=0
for f in $KQUANT_IMAGES/*.png $KQUANT_IMAGES/*.jpg; do
	for k in 16 256; do
		n=$(basename $f); n=${n%.*}
		$B/kquant quantize --backend cpu -k $k --force -o /tmp/q/$n-$k-cpu.png $f 2>>/tmp/g/e2e.err
		$B/kquant quantize --backend cuda -k $k --force --json -o /tmp/q/$n-$k-cuda.png $f > /tmp/q/$n-$k.json 2>>/tmp/g/e2e.err
		if cmp -s /tmp/q/$n-$k-cpu.png /tmp/q/$n-$k-cuda.png; then same=$((same+1)); else diff=$((diff+1)); echo "DIFFERS $n k=$k"; fi
		echo "$n k=$k $(grep -o '"timings_ms":{[^}]*}' /tmp/q/$n-$k.json)" >> /tmp/g/e2e.txt
	done
done
echo "e2e: $same same bytes, $diff differ $(el) s"
for r in 1 2 3; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		for img in home.jpg graf1.png altai-5120.png; do
			(cd cudakern && timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-$img-$v-$r.out) > /tmp/g/trace-$img-$v-$r.log 2>&1 || echo "$img $v $r failed"
		done
	done
	echo "traces $r $(el) s"
done
if which nsys >/dev/null 2>&1; then
	(cd cudakern && timeout 120 nsys profile -t cuda -o /tmp/g/graf1 --force-overwrite true $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256$' -test.benchtime 20x) > /tmp/g/nsys.log 2>&1
	echo "nsys rc=$? $(el) s"
	timeout 120 nsys stats -r cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_trace -f csv -o /tmp/g/graf1 /tmp/g/graf1.nsys-rep >> /tmp/g/nsys.log 2>&1
	echo "stats rc=$? $(el) s"; ls /tmp/g | grep -i csv
fi
cp /tmp/g/tests.log $O/
tar czf /tmp/c7.tgz -C /tmp/g --exclude='*.nsys-rep' --exclude='*.sqlite' .
split -b 15m /tmp/c7.tgz $O/c7.tgz.
ls -la $O
