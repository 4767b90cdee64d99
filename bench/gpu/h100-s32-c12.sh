#!/bin/sh
# Session 32, twelfth call: where the device's reduce goes: ncu's
# duration of every kq_rd_* kernel of 3 reductions of graf1's colours
# into 32768 parts (BenchmarkReduce, fin = 7, the default), against the
# benchmark's wall time a reduce. Binaries: .gpu/s32b/p.txz; images
# .gpu/s32b/imgs; carry [".gpu/s32b"].
set -u
R=$PWD; O=$OUT; mkdir -p /tmp/b; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/s32b/imgs
cd cudakern
$B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7' -test.benchtime 200x | grep ns/op
timeout 200 ncu --clock-control none -k regex:kq_rd_ --metrics gpu__time_duration.sum $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce/graf1.png/32768/fin=7$' -test.benchtime 3x > $O/ncu-reduce.log 2>&1
echo "ncu rc=$?"
grep -E "kq_rd_|gpu__time_duration" $O/ncu-reduce.log | paste - - | awk '{print $1, $(NF)}' | tail -40
