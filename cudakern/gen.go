package cudakern

import _ "embed"

// The kernels are compiled by nvcc (CUDA 13) into one fatbin with machine
// code for sm_75, 80, 86, 89, 90 and 120 and PTX for compute_75, which later
// GPUs compile at load time. `go generate ./cudakern` rebuilds it where nvcc
// exists; scripts/gpu-check.sh runs these same lines on the GPU machine.
// kernels.fatbin.sha256 records the SHA-256 of the sources it was built
// from, and TestFatbinMatchesSources fails when they have changed since.
//
//go:generate nvcc -O3 -std=c++17 --fatbin -Xptxas=-warn-spills -gencode=arch=compute_75,code=sm_75 -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_86,code=sm_86 -gencode=arch=compute_89,code=sm_89 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_120,code=sm_120 -gencode=arch=compute_75,code=compute_75 -o kernels.fatbin kernels.cu
//go:generate sh -c "sha256sum kernels.cu gen.go > kernels.fatbin.sha256"

//go:embed kernels.fatbin
var fatbinData []byte
