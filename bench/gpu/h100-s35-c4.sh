#!/bin/sh
# Session 35, fourth call (no build; call 3's binaries): is the host's gap
# between breaths (40–140 µs a breath, varying most) the Go runtime's?
# Default k = 256 runs with GOGC=off against the default GOGC, 3 rounds
# alternating: BenchmarkRunStages with -benchmem (allocations a run) and
# Go traces (every region's median), BenchmarkBreathPhases; and the GCs
# a run under GODEBUG=gctrace=1.
# Binaries: .gpu/s35/p.txz; images .gpu/s35/imgs; carry [".gpu/s35"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s35
cd cudakern
kq_tracesum .gpu/s35
for r in 1 2 3; do
	for g in 100 off; do
		for img in home.jpg graf1.png altai-5120.png; do
			GOGC=$g timeout 40 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.benchmem -test.trace /tmp/tr/t.out 2>&1 | grep ns/op | sed "s/^/gogc=$g /;s/  */ /g" >> $O/mem.txt
			/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$g-$r /" >> $O/regions.txt
		done
		echo "== $r gogc=$g" >> $O/breath-phases.txt
		GOGC=$g timeout 40 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkBreathPhases' -test.benchtime 30x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g' >> $O/breath-phases.txt
	done
	echo "round $r $(el) s"
done
GODEBUG=gctrace=1 timeout 40 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/graf1.png/k=256\$" -test.benchtime 100x > /tmp/g/gc.txt 2>&1
echo "gc lines in 100 graf1 runs: $(grep -c '^gc ' /tmp/g/gc.txt)"; grep '^gc ' /tmp/g/gc.txt | tail -3
cat $O/mem.txt
awk '$2=="bench.run"||$2=="kmeans.breathe"||$2=="cudakern.spec-wait"||$2=="cudakern.batch-spec"' $O/regions.txt | sort
echo "done $(el) s"
