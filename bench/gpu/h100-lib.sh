# Shared steps of the bench/gpu/h100-s3[45]-* device scripts (sourced, POSIX sh).
# (Session 34's scripts ran with these steps written out in each; they were
# moved here after the calls, unchanged; session 35's kq_verify and
# kq_tracesum likewise.)
# kq_setup DIR: unpack DIR/p.txz (the test binaries, and kquant where the
# call has it) into $B=/tmp/b; $I the images (DIR/imgs, also
# KQUANT_IMAGES); $R the tree, $O the call's $OUT; el the seconds since.
kq_setup() {
	R=$PWD; O=$OUT; B=/tmp/b; I=$R/$1/imgs
	mkdir -p $B /tmp/q /tmp/g; tar xJf $R/$1/p.txz -C $B
	export KQUANT_IMAGES=$I
	t0=$(date +%s)
}
el() { echo $(( $(date +%s)-t0 )); }

# kq_build rebuilds cudakern/kernels.fatbin (scripts/gpu-check.sh's build
# step), gzips it and its sha256 into $O, and sets $F to it.
kq_build() {
	OUT=/tmp/build STEPS=build GPU=$B sh scripts/gpu-check.sh > /tmp/g/build.txt 2>&1
	echo "build rc=$? $(el) s: $(tail -1 /tmp/g/build.txt)"
	grep -i "error" /tmp/g/build.txt | head -10
	gzip -c cudakern/kernels.fatbin > $O/kernels.fatbin.gz; cp cudakern/kernels.fatbin.sha256 $O/
	F=$R/cudakern/kernels.fatbin
}

# kq_tests runs every cudakern test on $F into $O/tests.log and counts them.
kq_tests() {
	(cd cudakern && KQUANT_FATBIN=$F timeout 200 $B/cudakern.test -test.v -test.timeout 190s) > $O/tests.log 2>&1
	echo "tests rc=$? $(el) s: $(grep -c '^--- PASS' $O/tests.log) pass, $(grep -c '^--- FAIL' $O/tests.log) fail, $(grep -c '^--- SKIP' $O/tests.log) skip, $(grep -c identical $O/tests.log) identical"
	grep -E '^--- FAIL|^--- SKIP|panic' $O/tests.log | head -20
}

# kq_e2e runs kquant quantize with --backend cpu and --backend cuda (on $F)
# on every image at k = 16 and 256 and compares the bytes ($O/e2e.txt).
kq_e2e() {
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
	echo "e2e: $same same bytes, $diff differ $(el) s" | tee -a $O/e2e.txt
}

# kq_bin V: the test binary of variant V (old: cudakern-old.test on its
# embedded fatbin; new: cudakern.test).
kq_bin() { if [ $1 = old ]; then echo $B/cudakern-old.test; else echo $B/cudakern.test; fi; }

# kq_check is kq_build, kq_tests and kq_e2e: the fatbin of the tree,
# rebuilt and checked.
kq_check() { kq_build; kq_tests; kq_e2e; }

# kq_reduce_ab: old against new (new on $F) on the reduced set's kernels:
# ncu's durations of kq_rd_levels and, with KQUANT_CUDA_REDUCE=launch, of
# kq_rd_finish alone (graf1 and home into 32768 parts, 3 reductions each;
# $O/ncu.txt), then BenchmarkReduce, 2 rounds ($O/reduce.txt).
kq_reduce_ab() {
	(
	cd cudakern
	for v in old new; do
		for img in graf1.png home.jpg; do
			KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_levels --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkReduce/$img/32768/fin=7\$" -test.benchtime 3x > /tmp/g/ncu.log 2>&1
			echo "$v $img kq_rd_levels: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
			KQUANT_CUDA_REDUCE=launch KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 60 ncu --clock-control none -k regex:kq_rd_finish --metrics gpu__time_duration.sum $(kq_bin $v) -test.run '^$' -test.bench "BenchmarkReduce/$img/32768/fin=7\$" -test.benchtime 3x > /tmp/g/ncu.log 2>&1
			echo "$v $img kq_rd_finish: $(grep gpu__time_duration /tmp/g/ncu.log | awk '{print $NF}' | tr '\n' ' ')"
		done
	done | tee $O/ncu.txt
	for r in 1 2; do
		for v in old new; do
			echo "== $r $v"
			KQUANT_FATBIN=$([ $v = new ] && echo $F) timeout 100 $(kq_bin $v) -test.run '^$' -test.bench 'BenchmarkReduce/.*/32768/fin=7$' -test.benchtime 100x 2>&1 | grep -E 'ns/op|FAIL|panic' | sed 's/  */ /g'
		done
	done | tee $O/reduce.txt
	)
}

# kq_verify is kq_tests and kq_e2e on the tree's own fatbin (no build).
kq_verify() { F=$R/cudakern/kernels.fatbin; kq_tests; kq_e2e; }

# kq_tracesum DIR unpacks DIR/ts.xz (bench/tracesum, built for the host)
# to /tmp/ts, and makes /tmp/tr for the traces.
kq_tracesum() { mkdir -p /tmp/tr; xz -dc $R/$1/ts.xz > /tmp/ts; chmod +x /tmp/ts; }

# kq_regions VAR "V1 V2 ..." ROUNDS: in cudakern/, after kq_tracesum, Go
# traces of 100 default k = 256 runs (BenchmarkRunStages) on home, graf1
# and altai with the environment variable VAR set to each value in turn,
# ROUNDS rounds, every region's line by tracesum into $O/regions.txt
# (prefixed image-value-round); then the lines of the whole runs and of
# breathing, sorted. (Session 36's calls 1 and 2 ran it written out; moved
# here after the calls, unchanged.)
kq_regions() {
	for r in $(seq $3); do
		for v in $2; do
			for img in home.jpg graf1.png altai-5120.png; do
				env $1=$v timeout 40 $B/cudakern.test -test.run '^$' -test.bench "BenchmarkRunStages/$img/k=256\$" -test.benchtime 100x -test.trace /tmp/tr/t.out > /dev/null 2>&1 || echo "$img $v $r failed"
				/tmp/ts /tmp/tr/t.out | sed "s/^/$img-$v-$r /" >> $O/regions.txt
			done
		done
		echo "round $r $(el) s"
	done
	awk '$2=="bench.run"||$2=="kmeans.breathe"' $O/regions.txt | sort
}
