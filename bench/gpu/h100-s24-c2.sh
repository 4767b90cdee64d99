#!/bin/sh
# Session 24, second call: the fatbin again (the first call's was over the
# 16 MiB a file that comes back; now gzipped), the default runs' stages
# with the breath out chained and not (KQUANT_CUDA_CHAIN=off), 3 rounds
# alternating, then a Go trace of 100 graf1 k = 256 default runs each way
# and a CPU profile of 300 with the chain (where the host's share goes).
# The binaries: as h100-s24-c1.sh's.
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s24/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s24/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
mkdir -p /tmp/gc
OUT=/tmp/gc STEPS=build GPU=$R/.gpu sh scripts/gpu-check.sh > /tmp/gc/build.txt 2>&1
echo "build rc=$? $(el) s"; tail -2 /tmp/gc/build.txt
tar czf $O/fatbin.tgz -C cudakern kernels.fatbin kernels.fatbin.sha256
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
for r in 1 2 3; do
	for v in on off; do
		(cd cudakern && KQUANT_CUDA_CHAIN=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 30x) > /tmp/gc/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
tar czf $O/stages.tgz -C /tmp/gc $(cd /tmp/gc && ls stages-*.log)
for v in on off; do
	(cd cudakern && KQUANT_CUDA_CHAIN=$v timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 100x -test.trace /tmp/gc/trace-$v.out) > /tmp/gc/trace-$v.log 2>&1
	echo "trace $v rc=$? $(el) s"
done
(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages/graf1.png/k=256' -test.benchtime 300x -test.cpuprofile /tmp/gc/cpu.prof) > /tmp/gc/cpu.log 2>&1
echo "cpu rc=$? $(el) s"
tar czf $O/traces.tgz -C /tmp/gc trace-on.out trace-off.out trace-on.log trace-off.log cpu.prof cpu.log
ls -la $O
