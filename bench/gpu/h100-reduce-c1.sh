#!/bin/sh
# The reduced set on the device (branch device-reduce), first call on the H100:
# build the fatbin, run every cudakern GPU test (TestReduceOnDevice, and the
# identity runs, whose default runs now reduce on the device), then
# BenchmarkReduce and the default runs' stages with the reduced set on the
# device and on the host (KQUANT_CUDA_REDUCE=host), alternating, and
# quantize end to end (main's kquant against the branch's).
#
# Before the call, here (Go):
#   mkdir -p .gpu/r1/imgs && cp ../shared/images/* .gpu/r1/imgs/   (every test image: a missing one skips a whole test)
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o .gpu/r1/cudakern.test ./cudakern
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o .gpu/r1/kq-new ./cmd/kquant
#   git stash -u; git checkout main; CGO_ENABLED=0 go build -ldflags='-s -w' -o .gpu/r1/kq-old ./cmd/kquant; git checkout device-reduce; git stash pop
#   tar czf .gpu/r1/b.tgz -C .gpu/r1 cudakern.test kq-new kq-old && rm .gpu/r1/cudakern.test .gpu/r1/kq-*
# and run it with carry [".gpu/r1"]; the fatbin comes back in out.tgz.
set -u
R=$PWD; O=/tmp/o; rm -rf $O; mkdir -p $O /tmp/b; tar xzf $R/.gpu/r1/b.tgz -C /tmp/b; B=/tmp/b
export KQUANT_IMAGES=$R/.gpu/r1/imgs
t0=$(date +%s); el() { echo $(( $(date +%s)-t0 )); }
{ nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } > $O/info.txt 2>&1
OUT=$O/gc STEPS=build GPU=$R/.gpu sh scripts/gpu-check.sh > $O/build.txt 2>&1
echo "build rc=$? $(el) s"
export KQUANT_FATBIN=$R/cudakern/kernels.fatbin
(cd cudakern && timeout 240 $B/cudakern.test -test.v -test.timeout 4m) > $O/tests.log 2>&1
echo "tests rc=$? $(el) s"
grep -E '^(--- FAIL|FAIL|ok|PASS)|TestReduce' $O/tests.log | head -20
(cd cudakern && timeout 90 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkReduce$' -test.benchtime 50x) > $O/bench-reduce.log 2>&1
echo "bench reduce rc=$? $(el) s"
for r in 1; do
	for where in device host; do
		v=; [ $where = host ] && v=host
		(cd cudakern && KQUANT_CUDA_REDUCE=$v timeout 90 $B/cudakern.test -test.run '^$' -test.bench 'BenchmarkRunStages' -test.benchtime 15x) > $O/stages-$where-$r.log 2>&1
		echo "stages $where $r rc=$? $(el) s"
	done
done
for r in 1 2; do
	for v in old new; do
		for k in 16 256; do
			for f in graf1.png altai-5120.png; do
				fb=$KQUANT_FATBIN; [ $v = old ] && fb=  # main's kquant: its own fatbin
				KQUANT_FATBIN=$fb $B/kq-$v quantize --backend cuda -k $k --json --force -o /tmp/q.png $KQUANT_IMAGES/$f 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$v', '$f', $k, d['timings_ms']['cluster'], d['timings_ms']['total'])" >> $O/e2e.txt
			done
		done
	done
done
echo "e2e $(el) s"
cp cudakern/kernels.fatbin cudakern/kernels.fatbin.sha256 $O/
cd $O && tar czf $OUT/out.tgz .
