package imgio_test

import (
	"fmt"

	"github.com/kquant/kquant/imgio"
)

func ExampleCompare() {
	orig, _, err := imgio.Load("testdata/quality/orig.png", imgio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// pngquant --nofs 16 testdata/quality/orig.png
	out, _, err := imgio.Load("testdata/quality/pngquant16.png", imgio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, err := imgio.Compare(orig, out)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("MSE %.2f, PSNR %.2f dB, ΔE2000 mean %.2f, p95 %.2f\n", q.MSE, q.PSNR, q.DeltaEMean, q.DeltaEP95)

	q, _ = imgio.Compare(orig, orig)
	fmt.Println("identical:", q.PSNR)
	// Output:
	// MSE 35.04, PSNR 32.69 dB, ΔE2000 mean 1.36, p95 6.12
	// identical: +Inf
}
