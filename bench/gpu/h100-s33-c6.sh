#!/bin/sh
# Session 33, sixth call: the session's final tree. Rebuilds the fatbin
# (gzipped into $OUT), runs every cudakern test on it, ncu's durations of
# kq_rd_levels (3 reductions of graf1 into 32768 parts), kquant quantize
# with --backend cpu and --backend cuda on every image at k = 16 and 256
# (bytes compared), then the session's end against its start (4768f73,
# cudakern-start.test on its embedded fatbin): BenchmarkRunStages (k = 256)
# and BenchmarkBreathPhases on home, graf1, altai, 3 rounds alternating.
# Binaries: .gpu/s33/p.txz; images .gpu/s33/imgs; carry [".gpu/s33"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b /tmp/q; tar xJf $R/.gpu/s33/p.txz -C /tmp/b; B=/tmp/b
I=$R/.gpu/s33/imgs
export KQUANT_IMAGES=$I
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
rm -rf /tmp/g; mkdir -p /tmp/g
OUT=/tmp/build STEPS=build GPU=/tmp/b sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
grep -i "error" /tmp/g/build.txt | head -10
gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
F=$R/cudakern/kernels.fatbin
(cd cudakern && KQUANT_FATBIN=$F timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
grep -E '^--- FAIL|^--- SKIP|panic' $O/tests.log | head -20
(cd cudakern && KQUANT_FATBIN=$F timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > /tmp/g/ncu.log 2>&1)
echo "ncu rc=$? kq_rd_levels: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
same=0; diff=0
for f in $I/*.png $I/*.jpg; do
	for k in 16 256; do
		n=$(basename $f); n=${n%.*}
		$B/kquant quantize --backend cpu -k $k --force -o /tmp/q/$n-$k-cpu.png $f 2>>/tmp/q/err
		KQUANT_FATBIN=$F $B/kquant quantize --backend cuda -k $k --force --json -o /tmp/q/$n-$k-cuda.png $f > /tmp/q/$n-$k.json 2>>/tmp/q/err
		if cmp -s /tmp/q/$n-$k-cpu.png /tmp/q/$n-$k-cuda.png; then same=$((same+1)); else diff=$((diff+1)); echo "DIFFERS $n k=$k"; fi
		echo "$n k=$k $(grep -o '"cluster":[0-9.]*' /tmp/q/$n-$k.json)"
	done
done > $O/e2e.txt
echo "e2e: $same same bytes, $diff differ $(el) s" | tee -a $O/e2e.txt; head -5 /tmp/q/err
cd cudakern
for r in 1 2 3; do
	for v in start end; do
		t=cudakern.test; [ $v = start ] && t=cudakern-start.test
		echo "== $r $v $(el) s"
		KQUANT_FATBIN=$([ $v = end ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkRunStages/.*/k=256$' -test.benchtime 100x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' | awk '{print $1, $3, $4, $(NF-1), $NF}'
		KQUANT_FATBIN=$([ $v = end ] && echo $F) timeout 60 $B/$t -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 50x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
	done
done
ls -la $O
