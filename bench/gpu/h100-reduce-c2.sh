#!/bin/sh
# The reduced set on the device, second call (fatbin committed, embedded in the binaries):
# the default runs' stages with the reduce on the device and on the host, 3 rounds alternating;
# quantize end to end, main's kquant (old) against the branch's (new), on the GPU and on the CPU,
# 4 rounds alternating, every stage's time. Binaries as in h100-reduce-c1.sh, in .gpu/r2.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xzf $R/.gpu/r2/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/r2/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
for r in 1 2 3; do
	for where in device host; do
		v=; [ $where = host ] && v=host
		(cd cudakern && KQUANT_CUDA_REDUCE=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 15x) > $O/stages-$where-$r.log 2>&1
		echo "stages $where $r rc=$? $(el) s"
	done
done
for r in 1 2 3 4; do
	for v in old new; do
		for be in cuda cpu; do
			for k in 16 256; do
				for f in graf1.png altai-5120.png home.jpg; do
					$B/kq-$v quantize --backend $be -k $k --json --force -o /tmp/q-$v.png $KQUANT_IMAGES/$f 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); t=d['timings_ms']; print('$v', '$be', '$f', $k, t['decode'], t['unique'], t['cluster'], t['map'], t['output'], t['total'], d['backend'])" >> $O/e2e.txt
				done
			done
		done
	done
	echo "e2e $r $(el) s"
done
cmp /tmp/q-old.png /tmp/q-new.png && echo "last outputs: same bytes" >> $O/e2e.txt
cd $O && tar czf $OUT/out.tgz .
