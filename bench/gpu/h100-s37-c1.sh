#!/bin/sh
# Session 37, first call (no build: the fatbin in the tree): breathing's
# Assigns of its best deferred (DeferAssign) against KQUANT_CUDA_DEFER=off.
# Every cudakern test (TestBreathOutChained logs the deferrals), Go traces
# of 100 default k = 256 runs, 3 rounds alternating (tracesum, with the
# new kmeans.relabel region), then kquant quantize cpu against cuda.
# Binaries: .gpu/s37/p.txz; images .gpu/s37/imgs; carry [".gpu/s37"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s37
F=$R/cudakern/kernels.fatbin
kq_tests
grep -E 'never made|Assigns spared' $O/tests.log | head -50
cd cudakern
kq_tracesum .gpu/s37
kq_regions KQUANT_CUDA_DEFER "on off" 3
awk '$2=="kmeans.relabel"||$2=="kmeans.starts"||$2=="kmeans.refine"' $O/regions.txt | sort
cd $R
kq_e2e
echo "done $(el) s"
