#!/bin/sh
# Session 24, first call on the H100: build the fatbin with kq_br_shrink
# (the breath out chained after the grown run's batch), run every cudakern
# GPU test, then the default runs' stages with the chain on and off
# (KQUANT_CUDA_CHAIN=off), alternating.
#
# Before the call, here (Go):
#   mkdir -p .gpu/s24 && cp -r .gpu/s23/imgs .gpu/s24/
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o .gpu/s24/cudakern.test ./cudakern
#   tar czf .gpu/s24/b.tgz -C .gpu/s24 cudakern.test && rm .gpu/s24/cudakern.test
# and run it with carry [".gpu/s24"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s24/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s24/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } > $O/info.txt 2>&1
OUT=$O/gc STEPS=build GPU=$R/.gpu sh scripts/gpu-check.sh > $O/build.txt 2>&1
echo "build rc=$? $(el) s"; tail -3 $O/build.txt
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
(cd cudakern && timeout 100 $B/cudakern.test -test.v -test.run 'TestBreathOutChained|TestParamsLayout' -test.timeout 90s) > $O/chain-test.log 2>&1
echo "chain test rc=$? $(el) s"
grep -E '^(--- |FAIL|ok|PASS)|taken|differ' $O/chain-test.log | head -30
for r in 1 2; do
	for v in on off; do
		(cd cudakern && KQUANT_CUDA_CHAIN=$v timeout 80 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 15x) > $O/stages-$v-$r.log 2>&1
		echo "stages $v $r rc=$? $(el) s"
	done
done
(cd cudakern && timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
echo "tests rc=$? $(el) s"
grep -E '^(--- FAIL|FAIL|ok|PASS)' $O/tests.log | head -20
echo "identity: $(grep -c identical $O/tests.log) identical"
