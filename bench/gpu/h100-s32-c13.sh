#!/bin/sh
# Session 32, thirteenth call: kq_rd_compact with a run of slots a
# thread and one scan. Rebuilds the fatbin (gzipped into $OUT), runs
# every cudakern test on it, ncu's durations of the kq_rd_* kernels of 3
# reductions of graf1 into 32768 parts, then BenchmarkReduce (graf1,
# altai, home; fin = 7) and Go traces of 100 default k = 256 runs on
# graf1, 3 rounds alternating 6c122c3 (cudakern-old.test, its embedded
# fatbin) and this tree on the rebuilt one.
# Binaries: .gpu/s32b/p.txz; images .gpu/s32b/imgs; carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 230 $B/cudakern.test -test.v -test.timeout 220s) > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|panic' $O/tests.log | head -20
cd cudakern
KQUANT_FATBIN=$F timeout 100 ncu --clock-control none -k regex:kq_rd_ --metrics gpu__time_duration.sum $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > /tmp/g/ncu-reduce.log 2>&1
echo "ncu rc=$?"; grep -E "kq_rd_|gpu__time_duration" /tmp/g/ncu-reduce.log | paste - - | awk '{print $1, $(NF)}' | tail -14
for r in 1 2 3; do
	for v in old new; do
		t=cudakern.test; [ $v = old ] && t=cudakern-old.test
		printf "%s %s\n" $r $v; KQUANT_FATBIN=$([ $v = new ] && echo $F) $B/$t -test.run '^$' -test.bench 'BenchmarkReduce/.*/fin=7$' -test.benchtime 200x | grep ns/op
		KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench "BenchmarkRunStages/graf1.png/k=256\$" -test.benchtime 100x -test.trace /tmp/g/trace-graf1.png-$v-$r.out > /tmp/g/trace-$v-$r.log 2>&1 || echo "trace $v $r failed"
	done
done
cd ..
tar czf $O/c13.tgz -C /tmp/g .
ls -la $O
