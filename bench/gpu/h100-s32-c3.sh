#!/bin/sh
# Session 32, third call: where the host's time of a breath goes. CPU
# profiles (Go's pprof) of 300 default k = 256 runs on graf1
# (BenchmarkRunStages) with the breath after next started on the device
# and without (KQUANT_CUDA_PREDICT=off), on the fatbin of call 2.
# Binaries: .gpu/s32/b.tgz (+ the fatbin .gpu/s32/kernels.fatbin);
# images .gpu/s32/imgs; carry [".gpu/s32"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xzf $R/.gpu/s32/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32/imgs KQUANT_FATBIN=$R/cudakern/kernels.fatbin
for P in on off; do
	(cd cudakern && KQUANT_CUDA_PREDICT=$P timeout 100 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/graf1.png/k=256\$" -test.benchtime 300x -test.cpuprofile $O/cpu-$P.prof) > $O/cpu-$P.log 2>&1
	echo "$P rc=$?"; grep -E "ns/op" $O/cpu-$P.log
done
(cd cudakern && timeout 60 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRoundTrip" -test.benchtime 2000x) > $O/roundtrip.log 2>&1
grep ns/op $O/roundtrip.log
ls -la $O
